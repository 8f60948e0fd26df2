#include "common/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace rlswarm {
namespace {

constexpr std::uint32_t kPolynomial = 0x82F63B78;  // reflected Castagnoli

constexpr std::array<std::uint32_t, 256> MakeTable() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPolynomial : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr std::array<std::uint32_t, 256> kTable = MakeTable();

std::uint32_t ExtendSoftware(std::uint32_t crc, const std::byte* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    crc = kTable[(crc ^ static_cast<std::uint8_t>(p[i])) & 0xFF] ^ (crc >> 8);
  }
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t ExtendHardware(std::uint32_t crc,
                                                               const std::byte* p, std::size_t n) {
  std::uint64_t c = crc;
  for (; n >= 8; n -= 8, p += 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
  }
  auto c32 = static_cast<std::uint32_t>(c);
  for (; n > 0; --n, ++p) c32 = _mm_crc32_u8(c32, static_cast<std::uint8_t>(*p));
  return c32;
}

bool HasSse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

std::uint32_t Crc32cExtend(std::uint32_t crc, std::span<const std::byte> data) {
  crc = ~crc;
#if defined(__x86_64__)
  if (HasSse42()) return ~ExtendHardware(crc, data.data(), data.size());
#endif
  return ~ExtendSoftware(crc, data.data(), data.size());
}

}  // namespace rlswarm
