#pragma once

// Test helper shared by the MinAtar game tests: a game's observation as a
// [10][10][C] array, read cell by cell.

#include <array>
#include <cstddef>
#include <cstdint>

#include "envs/minatar/minatar_env.h"

namespace rlswarm::envs::minatar {

template <int kChannels>
using GridOf = std::array<std::uint8_t, kGridSize * kGridSize * kChannels>;

template <class Game>
GridOf<Game::kChannels> Observe(const Game& game) {
  GridOf<Game::kChannels> grid{};
  game.WriteState(grid.data());
  return grid;
}

// Whether channel c is set at row y, column x.
template <std::size_t N>
bool At(const std::array<std::uint8_t, N>& grid, int y, int x, int c) {
  constexpr int channels = static_cast<int>(N / (kGridSize * kGridSize));
  return grid[(y * kGridSize + x) * channels + c] != 0;
}

}  // namespace rlswarm::envs::minatar
