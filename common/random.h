#pragma once

// rlswarm's one random-number module: environments, actors' exploration,
// replay's sampling and the learner's per-rank seeds all draw from it.
//
// Why not std::uniform_*_distribution: their output is implementation-defined,
// so the same seed would give different episodes (or sampled batches) under
// libstdc++ and libc++. Every draw here is defined bit for bit (xoshiro256++
// seeded by SplitMix64), so a stream depends only on its seed. Not
// thread-safe: one Rng per env, per sampler, per table (under its lock).

#include <cmath>
#include <cstdint>

namespace rlswarm {

// SplitMix64's output function: a bijective mix of 64 bits (Steele et al.
// 2014), without the generator's increment.
constexpr std::uint64_t SplitMix64Finalize(std::uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// One SplitMix64 step from state `x`: the increment, then the finaliser.
constexpr std::uint64_t Mix64(std::uint64_t x) {
  return SplitMix64Finalize(x + 0x9e3779b97f4a7c15ULL);
}

// Seed of stream `index` under `seed`: env i of a VectorEnv, episode k of an
// evaluation. Distinct indices give statistically independent streams.
constexpr std::uint64_t DeriveSeed(std::uint64_t seed, std::uint64_t index) {
  return Mix64(Mix64(seed) ^ Mix64(index + 0x632be59bd9b4e019ULL));
}

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0) { Seed(seed); }

  void Seed(std::uint64_t seed) {
    // Consecutive SplitMix64 outputs: distinct inputs of a bijection, so the
    // state is never all zero.
    for (int i = 0; i < 4; ++i) s_[i] = Mix64(seed + 0x9e3779b97f4a7c15ULL * i);
  }

  // xoshiro256++ (Blackman & Vigna 2019).
  std::uint64_t NextU64() {
    const std::uint64_t result = Rotl(s_[0] + s_[3], 23) + s_[0];
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits, like NumPy's random().
  double Uniform01() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }

  // Uniform in [low, high).
  double Uniform(double low, double high) { return low + (high - low) * Uniform01(); }

  // Uniform integer in [0, n), unbiased (Lemire 2019). n must be > 0.
  std::uint64_t Below(std::uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(NextU64()) * n;
    auto low = static_cast<std::uint64_t>(m);
    if (low < n) {
      const std::uint64_t threshold = -n % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(NextU64()) * n;
        low = static_cast<std::uint64_t>(m);
      }
    }
    return static_cast<std::uint64_t>(m >> 64);
  }

  // Uniform integer in [low, high), like NumPy's randint(low, high).
  std::int64_t Integer(std::int64_t low, std::int64_t high) {
    return low + static_cast<std::int64_t>(Below(static_cast<std::uint64_t>(high - low)));
  }

  // True with probability p, as NumPy's `rand() < p`.
  bool Bernoulli(double p) { return Uniform01() < p; }

  // Standard normal, by Box-Muller from two uniform draws (the cosine
  // branch only, so each value costs two draws and the stream stays simple):
  // defined bit for bit up to libm's log, sqrt and cos, which are correctly
  // rounded or nearly so in glibc.
  double Normal() {
    const double u1 = 1.0 - Uniform01();  // (0, 1]: log is finite
    const double u2 = Uniform01();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  static constexpr std::uint64_t Rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

}  // namespace rlswarm
