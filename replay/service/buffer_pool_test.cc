#include "replay/service/buffer_pool.h"

#include <gtest/gtest.h>

#include <thread>

namespace rlswarm::replay {
namespace {

TEST(BufferPoolTest, ASharedBufferComesBackWhenItsLastOwnerLetsGo) {
  auto pool = BufferPool::Create(4);
  std::vector<std::byte> buffer = pool->Take(1000);
  EXPECT_GE(buffer.capacity(), 1000u);
  buffer.resize(10, std::byte{7});
  const std::byte* memory = buffer.data();
  auto shared = pool->Share(std::move(buffer));
  auto second_owner = shared;  // e.g. a frame still being sent
  EXPECT_EQ(shared->size(), 10u);
  shared.reset();
  EXPECT_EQ(pool->idle(), 0u);
  second_owner.reset();
  EXPECT_EQ(pool->idle(), 1u);
  // The same memory, emptied, capacity kept.
  std::vector<std::byte> again = pool->Take(1000);
  EXPECT_EQ(again.data(), memory);
  EXPECT_TRUE(again.empty());
  EXPECT_EQ(pool->idle(), 0u);
}

TEST(BufferPoolTest, KeepsAtMostItsLimitAndGrowsSmallBuffers) {
  auto pool = BufferPool::Create(2);
  std::vector<std::shared_ptr<const std::vector<std::byte>>> shared;
  for (int i = 0; i < 5; ++i) shared.push_back(pool->Share(pool->Take(16)));
  shared.clear();
  EXPECT_EQ(pool->idle(), 2u);
  EXPECT_GE(pool->Take(1 << 20).capacity(), std::size_t{1} << 20);
}

TEST(BufferPoolTest, BuffersMayOutliveThePoolAndReturnFromOtherThreads) {
  auto pool = BufferPool::Create(8);
  auto shared = pool->Share(pool->Take(64));
  std::thread other([kept = pool->Share(pool->Take(64))]() mutable { kept.reset(); });
  other.join();
  EXPECT_EQ(pool->idle(), 1u);
  pool.reset();
  shared.reset();  // no pool to return to: freed, no crash (ASan checks)
}

}  // namespace
}  // namespace rlswarm::replay
