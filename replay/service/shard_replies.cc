#include "replay/service/shard_replies.h"

#include <utility>

namespace rlswarm::replay {

void ShardReplies::Deliver(std::size_t shard, rpc::Reply* reply, std::exception_ptr error) {
  ShardReply r;
  r.shard = shard;
  r.error = std::move(error);
  if (!r.error && reply) r.reply = std::move(*reply);
  {
    MutexLock lock(mu_);
    replies_.push_back(std::move(r));
  }
  arrived_.NotifyOne();
}

std::optional<ShardReply> ShardReplies::WaitNext(std::chrono::steady_clock::time_point until) {
  MutexLock lock(mu_);
  if (!arrived_.WaitUntil(lock, until,
                          [this]() RLSWARM_REQUIRES(mu_) { return !replies_.empty(); })) {
    return std::nullopt;
  }
  ShardReply r = std::move(replies_.front());
  replies_.pop_front();
  return r;
}

}  // namespace rlswarm::replay
