#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace rlswarm {
namespace {

TEST(Crc32cTest, MatchesTheStandardCheckValue) {
  const std::string text = "123456789";
  const auto bytes = std::as_bytes(std::span(text.data(), text.size()));
  EXPECT_EQ(Crc32c(bytes), 0xE3069283u);
  EXPECT_EQ(Crc32cExtend(Crc32c(bytes.first(4)), bytes.subspan(4)), 0xE3069283u);
  std::vector<std::byte> long_input(1000, std::byte{0x5a});  // the 8-byte path
  std::uint32_t bytewise = 0;
  for (std::byte b : long_input) bytewise = Crc32cExtend(bytewise, std::span(&b, 1));
  EXPECT_EQ(Crc32c(long_input), bytewise);
}

TEST(Crc32cTest, OfNothingIsZero) { EXPECT_EQ(Crc32c(std::span<const std::byte>{}), 0u); }

}  // namespace
}  // namespace rlswarm
