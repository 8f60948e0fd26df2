#pragma once

// The replay table's random numbers: xoshiro256** (Blackman & Vigna, 2018)
// seeded through splitmix64, with our own uniform distributions. std::
// distributions are implementation-defined, so the same seed would sample
// different items under libstdc++ and libc++; these do not.
//
// Not thread safe: the owning Table calls it under its lock.

#include <bit>
#include <cstdint>

namespace rlswarm::replay {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    for (auto& word : state_) word = SplitMix64(seed);
  }

  std::uint64_t Next() {
    const std::uint64_t result = std::rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = std::rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double UniformDouble() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  // Uniform in [0, n), exactly (Lemire's multiply-shift with rejection).
  // Requires n > 0.
  std::uint64_t UniformInt(std::uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(Next()) * n;
    auto low = static_cast<std::uint64_t>(m);
    if (low < n) {
      const std::uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(Next()) * n;
        low = static_cast<std::uint64_t>(m);
      }
    }
    return static_cast<std::uint64_t>(m >> 64);
  }

 private:
  static std::uint64_t SplitMix64(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  std::uint64_t state_[4];
};

}  // namespace rlswarm::replay
