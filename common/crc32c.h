#pragma once

// CRC-32C (Castagnoli), the checksum of checkpoint files: the SSE4.2 crc32
// instruction where the CPU has it (checked at run time), a table otherwise.
// Same values as RFC 3720 / LevelDB / Reverb: Crc32c("123456789") = 0xE3069283.

#include <cstddef>
#include <cstdint>
#include <span>

namespace rlswarm {

// The CRC of the bytes so far, `crc`, extended by `data`. Start from 0.
std::uint32_t Crc32cExtend(std::uint32_t crc, std::span<const std::byte> data);
inline std::uint32_t Crc32c(std::span<const std::byte> data) { return Crc32cExtend(0, data); }

}  // namespace rlswarm
