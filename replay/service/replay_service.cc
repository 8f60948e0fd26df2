#include "replay/service/replay_service.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "replay/json.h"
#include "replay/service/protocol.h"

namespace rlswarm::replay {
namespace {

using rpc::Request;
using rpc::Responder;
using Json = nlohmann::json;

// Replies with the status of a table error (the same exception type reaches
// the client); anything that is not an rlswarm::Error is Internal.
void FailWith(const Responder& responder, std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    responder.Fail(e.code(), e.what());
  } catch (const std::exception& e) {
    responder.Fail(StatusCode::kInternal, e.what());
  }
}

std::vector<Payload> JsonReply(const Json& j) {
  std::vector<Payload> payloads;
  payloads.push_back(Payload::FromString(j.dump()));
  return payloads;
}

Json CheckpointInfoToJson(const CheckpointInfo& info) {
  return {{"path", info.path},
          {"sequence", info.sequence},
          {"items", info.items},
          {"data_bytes", info.data_bytes},
          {"lock_seconds", info.lock_seconds},
          {"write_seconds", info.write_seconds}};
}

}  // namespace

void ReplayServiceOptions::Validate() const {
  if (num_shards < 1 || num_shards > protocol::kMaxShards) {
    throw InvalidArgument("replay service: num_shards must be in [1, " +
                          std::to_string(protocol::kMaxShards) + "], got " +
                          std::to_string(num_shards));
  }
  if (shard < 0 || shard >= num_shards) {
    throw InvalidArgument("replay service: shard " + std::to_string(shard) + " is not in [0, " +
                          std::to_string(num_shards) + ")");
  }
  if (static_cast<int>(peers.size()) >= num_shards) {
    throw InvalidArgument("replay service: " + std::to_string(peers.size()) +
                          " peers for a service of " + std::to_string(num_shards) + " shards");
  }
  if (checkpoint_interval.count() < 0 || peer_poll_interval.count() <= 0) {
    throw InvalidArgument(
        "replay service: checkpoint_interval must be >= 0 and peer_poll_interval > 0");
  }
  if (checkpoint_interval.count() > 0 && !checkpoints) {
    throw InvalidArgument("replay service: checkpoint_interval needs a checkpoint directory");
  }
  table.Validate();
  server.Validate();
  if (checkpoints) checkpoints->Validate();
}

ReplayService::ReplayService(ReplayServiceOptions options) : options_(std::move(options)) {
  options_.Validate();
  if (options_.checkpoints) checkpointer_ = std::make_unique<Checkpointer>(*options_.checkpoints);
}

ReplayService::~ReplayService() { Stop(); }

void ReplayService::Start() {
  {
    MutexLock lock(mu_);
    if (started_) throw FailedPrecondition("replay service: Start() called twice");
    started_ = true;
  }
  std::optional<LoadedCheckpoint> loaded;
  if (checkpointer_) loaded = checkpointer_->LoadNewest(options_.table);
  if (loaded) {
    spdlog::info("shard {}: resumed from {} ({} items, checkpoint {})", options_.shard,
                 loaded->info.path, loaded->info.items, loaded->info.sequence);
    table_ = std::move(loaded->table);
    MutexLock lock(mu_);
    stats_.loaded = loaded->info;
  } else {
    if (checkpointer_) {
      spdlog::info("shard {}: no checkpoint in {}, starting empty", options_.shard,
                   options_.checkpoints->directory);
    }
    table_ = std::make_unique<Table>(options_.table);
  }
  table_->SetWaiterParkedHook([this](Deadline deadline) { WaiterParked(deadline); });
  server_ = std::make_unique<rpc::Server>(options_.server);
  RegisterHandlers();
  server_->Start();
  for (const std::string& endpoint : options_.peers) {
    rpc::ClientOptions client = options_.peer_client;
    client.endpoint = endpoint;
    client.name = "replay-peer";
    peers_.push_back(std::make_unique<rpc::Client>(client));
  }
  {
    // No other thread runs yet; the lock is for the analysis' sake.
    MutexLock lock(mu_);
    peer_totals_.assign(peers_.size(), TableTotals{});
    peer_call_pending_.assign(peers_.size(), false);
  }
  maintenance_ = std::thread([this] { MaintenanceLoop(); });
  if (options_.checkpoint_interval.count() > 0) {
    checkpointing_ = std::thread([this] { CheckpointLoop(); });
  }
  spdlog::info("shard {}/{} serving '{}' on {}", options_.shard, options_.num_shards,
               options_.table.name, server_->endpoint());
}

std::string ReplayService::endpoint() const {
  if (!server_) throw FailedPrecondition("replay service: not started");
  return server_->endpoint();
}

Table& ReplayService::table() {
  if (!table_) throw FailedPrecondition("replay service: not started");
  return *table_;
}

void ReplayService::Stop() {
  {
    MutexLock lock(mu_);
    if (!started_ || stopping_) return;
    stopping_ = true;
  }
  wake_.NotifyAll();
  maintenance_wake_.NotifyAll();
  table_->Close();
  server_->Stop();
  if (maintenance_.joinable()) maintenance_.join();
  if (checkpointing_.joinable()) checkpointing_.join();
  for (auto& peer : peers_) peer->Close();
  if (checkpointer_ && options_.checkpoint_on_stop) {
    try {
      WriteCheckpoint();
    } catch (const std::exception& e) {
      spdlog::error("shard {}: final checkpoint failed: {}", options_.shard, e.what());
    }
  }
}

CheckpointInfo ReplayService::WriteCheckpoint() {
  if (!checkpointer_) {
    throw FailedPrecondition("replay shard " + std::to_string(options_.shard) +
                             " has no checkpoint directory");
  }
  try {
    CheckpointInfo info = checkpointer_->Write(table());
    MutexLock lock(mu_);
    ++stats_.checkpoints_written;
    stats_.last_checkpoint = info;
    return info;
  } catch (const std::exception& e) {
    MutexLock lock(mu_);
    ++stats_.checkpoints_failed;
    stats_.last_checkpoint_error = e.what();
    throw;
  }
}

ReplayServiceStats ReplayService::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

std::string ReplayService::InfoJson() const {
  const ReplayServiceStats s = stats();
  const rpc::ServerStats server = server_->stats();
  Json checkpoints = {{"directory", options_.checkpoints ? options_.checkpoints->directory : ""},
                      {"interval_s", options_.checkpoint_interval.count() / 1000.0},
                      {"written", s.checkpoints_written},
                      {"failed", s.checkpoints_failed},
                      {"last_error", s.last_checkpoint_error},
                      {"last", nullptr},
                      {"loaded", nullptr}};
  if (s.last_checkpoint) checkpoints["last"] = CheckpointInfoToJson(*s.last_checkpoint);
  if (s.loaded) checkpoints["loaded"] = CheckpointInfoToJson(*s.loaded);
  const Json j = {{"shard", options_.shard},
                  {"num_shards", options_.num_shards},
                  {"endpoint", server_->endpoint()},
                  {"global_ratio", !options_.peers.empty()},
                  {"peer_polls_failed", s.peer_polls_failed},
                  {"table", TableInfoToJson(table_->Info())},
                  {"server",
                   {{"requests", server.requests},
                    {"replies", server.replies},
                    {"malformed", server.malformed},
                    {"unknown_method", server.unknown_method},
                    {"rejected_queue_full", server.rejected_queue_full},
                    {"expired_in_queue", server.expired_in_queue},
                    {"replies_dropped", server.replies_dropped}}},
                  {"checkpoints", std::move(checkpoints)}};
  return j.dump();
}

void ReplayService::RegisterHandlers() {
  const int shard = options_.shard;
  Table* table = table_.get();
  // The data-path calls never wait (a held insert or sample becomes a table
  // waiter and its reply is deferred) and hold the table lock only to copy
  // rows: they run on the server's I/O thread, which saves two thread
  // hand-overs per call. checkpoint, info and reconfigure may take long and
  // run on the workers.
  const rpc::HandlerOptions on_io_thread{.run_on_io_thread = true};

  server_->Register(
      protocol::kInsert,
      [table, shard](Request request, Responder responder) {
        // The batch's views point into the request's frames: keep both alive
        // until the (possibly deferred) insert completes.
        struct Pending {
          Request request;
          protocol::DecodedInsert decoded;
        };
        auto pending = std::make_shared<Pending>();
        pending->request = std::move(request);
        protocol::DecodeInsert(pending->request.payloads, pending->decoded);
        table->InsertAsync(protocol::ToInsertBatch(pending->decoded), pending->request.deadline,
                           [pending, responder, shard](Result<std::vector<std::uint64_t>> result) {
                             if (!result.ok()) return FailWith(responder, result.error());
                             std::vector<Payload> reply;
                             reply.push_back(protocol::EncodeKeys(shard, result.value()));
                             responder.Reply(std::move(reply));
                           });
      },
      on_io_thread);

  server_->Register(
      protocol::kSample,
      [table, shard](Request request, Responder responder) {
        const SampleRequest sample = protocol::DecodeSampleRequest(request.payloads);
        table->SampleAsync(
            sample, request.deadline, [table, responder, shard](Result<SampledBatch> result) {
              if (!result.ok()) return FailWith(responder, result.error());
              try {
                responder.Reply(
                    protocol::EncodeSampleReply(shard, table->Totals(), std::move(result.value())));
              } catch (...) {
                FailWith(responder, std::current_exception());
              }
            });
      },
      on_io_thread);

  server_->Register(
      protocol::kUpdatePriorities,
      [table, shard](Request request, Responder responder) {
        std::span<const std::uint64_t> global_keys;
        std::span<const double> priorities;
        protocol::DecodePriorityUpdate(request.payloads, global_keys, priorities);
        // Keys of another shard (a misrouted update) are not this table's:
        // they are counted as ignored, exactly like evicted ones.
        std::vector<std::uint64_t> keys(global_keys.size());
        for (std::size_t i = 0; i < keys.size(); ++i) {
          keys[i] = protocol::ShardOfKey(global_keys[i]) == shard
                        ? protocol::LocalKey(global_keys[i])
                        : 0;  // 0 is never a key
        }
        const PriorityUpdateResult result = table->UpdatePriorities(keys, priorities);
        responder.Reply(protocol::EncodePriorityUpdateReply(result, table->Totals()));
      },
      on_io_thread);

  server_->Register(
      protocol::kTotals,
      [table](Request, Responder responder) {
        std::vector<Payload> reply;
        reply.push_back(protocol::EncodeTotals(table->Totals()));
        responder.Reply(std::move(reply));
      },
      on_io_thread);

  server_->Register(protocol::kInfo, [this](Request, Responder responder) {
    std::vector<Payload> reply;
    reply.push_back(Payload::FromString(InfoJson()));
    responder.Reply(std::move(reply));
  });

  server_->Register(protocol::kCheckpoint, [this](Request, Responder responder) {
    responder.Reply(JsonReply(CheckpointInfoToJson(WriteCheckpoint())));
  });

  server_->Register(protocol::kReconfigure, [this, table](Request request, Responder responder) {
    if (request.payloads.size() != 1) {
      throw InvalidArgument("reconfigure: expected one JSON payload");
    }
    const TableReconfig change = protocol::DecodeReconfig(request.payloads[0].ToString());
    table->Reconfigure(change);
    spdlog::info("shard {}: reconfigured: {}", options_.shard, protocol::EncodeReconfig(change));
    std::vector<Payload> reply;
    reply.push_back(Payload::FromString(InfoJson()));
    responder.Reply(std::move(reply));
  });
}

void ReplayService::MaintenanceLoop() {
  using Clock = std::chrono::steady_clock;
  // With no waiter and no peer it sleeps until a waiter is parked; the cap
  // keeps the deadline far from the clock's end.
  constexpr auto kLongestSleep = std::chrono::hours(1);
  auto next_poll = Clock::now();
  MutexLock lock(mu_);
  while (!stopping_) {
    lock.Unlock();
    const auto now = Clock::now();
    table_->ExpireWaiters(now);
    if (!peers_.empty() && now >= next_poll) {
      PollPeers();
      next_poll = now + options_.peer_poll_interval;
    }
    // A waiter parked from here on is seen: by NextWaiterDeadline, or, if
    // it comes later, by WaiterParked (maintenance_until_ is still max).
    Clock::time_point until = peers_.empty() ? Clock::now() + kLongestSleep : next_poll;
    if (const std::optional<Deadline> next = table_->NextWaiterDeadline()) {
      until = std::min(until, *next);
    }
    lock.Lock();
    maintenance_until_ = until;
    maintenance_wake_.WaitUntil(
        lock, until, [this]() RLSWARM_REQUIRES(mu_) { return stopping_ || earlier_waiter_; });
    earlier_waiter_ = false;
    maintenance_until_ = Clock::time_point::max();
  }
}

void ReplayService::WaiterParked(Deadline deadline) {
  {
    MutexLock lock(mu_);
    if (deadline >= maintenance_until_) return;  // it wakes by then anyway
    earlier_waiter_ = true;
  }
  maintenance_wake_.NotifyOne();
}

void ReplayService::PollPeers() {
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    {
      MutexLock lock(mu_);
      if (peer_call_pending_[i] || stopping_) continue;
      peer_call_pending_[i] = true;
    }
    rpc::CallOptions call;
    call.timeout = std::max(std::chrono::milliseconds(1000), 10 * options_.peer_poll_interval);
    call.idempotent = true;
    peers_[i]->CallAsync(
        protocol::kTotals, {}, call, [this, i](rpc::Reply* reply, std::exception_ptr error) {
          std::int64_t inserts = 0;
          std::int64_t samples = 0;
          {
            MutexLock lock(mu_);
            peer_call_pending_[i] = false;
            if (!reply || error || stopping_) {
              if (!stopping_) ++stats_.peer_polls_failed;
              return;  // keep the last known counts of that peer
            }
            try {
              peer_totals_[i] = protocol::DecodeTotals(reply->payloads, 0);
            } catch (const std::exception& e) {
              ++stats_.peer_polls_failed;
              spdlog::warn("shard {}: bad totals from a peer: {}", options_.shard, e.what());
              return;
            }
            for (const TableTotals& t : peer_totals_) {
              inserts += t.inserted;
              samples += t.sampled;
            }
          }
          table_->SetRemoteCounts(inserts, samples);
        });
  }
}

void ReplayService::CheckpointLoop() {
  MutexLock lock(mu_);
  while (!stopping_) {
    if (wake_.WaitFor(lock, options_.checkpoint_interval,
                      [this]() RLSWARM_REQUIRES(mu_) { return stopping_; })) {
      break;
    }
    lock.Unlock();
    try {
      WriteCheckpoint();  // the checkpointer logs what it wrote
    } catch (const std::exception& e) {
      spdlog::error("shard {}: checkpoint failed, the last good one stays: {}", options_.shard,
                    e.what());
    }
    lock.Lock();
  }
}

}  // namespace rlswarm::replay
