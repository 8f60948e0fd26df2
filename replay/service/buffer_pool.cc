#include "replay/service/buffer_pool.h"

#include <utility>

namespace rlswarm::replay {

std::shared_ptr<BufferPool> BufferPool::Create(std::size_t max_buffers) {
  return std::shared_ptr<BufferPool>(new BufferPool(max_buffers));
}

std::vector<std::byte> BufferPool::Take(std::size_t bytes) {
  std::vector<std::byte> buffer;
  {
    MutexLock lock(mu_);
    if (!idle_.empty()) {
      buffer = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  buffer.clear();
  buffer.reserve(bytes);
  return buffer;
}

std::shared_ptr<const std::vector<std::byte>> BufferPool::Share(std::vector<std::byte> buffer) {
  std::weak_ptr<BufferPool> pool = weak_from_this();
  return std::shared_ptr<const std::vector<std::byte>>(
      new std::vector<std::byte>(std::move(buffer)),
      [pool = std::move(pool)](const std::vector<std::byte>* shared) {
        auto* owned = const_cast<std::vector<std::byte>*>(shared);
        if (auto alive = pool.lock()) alive->Give(std::move(*owned));
        delete owned;
      });
}

void BufferPool::Give(std::vector<std::byte>&& buffer) {
  MutexLock lock(mu_);
  if (idle_.size() < max_buffers_) idle_.push_back(std::move(buffer));
}

std::size_t BufferPool::idle() const {
  MutexLock lock(mu_);
  return idle_.size();
}

}  // namespace rlswarm::replay
