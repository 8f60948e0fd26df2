#pragma once

// MinAtar (Young & Tian 2019, github.com/kenjyoung/MinAtar): five Atari games
// on a 10x10 grid. Each game is a plain class with the game rules of the
// reference implementation's `minatar/environments/<game>.py`; MinAtarEnv
// adds what the reference's `Environment` wrapper adds (sticky actions, the
// action set) and adapts the game to the Env interface.
//
// A Game class provides:
//   static constexpr const char* kName;          // "Breakout"
//   static constexpr int kChannels;              // observation channels
//   static constexpr std::array<int, K> kMinimalActions;  // in the full set
//   explicit Game(bool difficulty_ramping);
//   void Reset(Rng& rng);                        // the reference's reset()
//   Outcome Act(int action, Rng& rng);           // act(a), a in the full set
//   void WriteState(std::uint8_t* grid) const;   // state(): sets the 1s of a
//                                                // zeroed [10][10][kChannels]

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include "envs/env.h"

namespace rlswarm::envs::minatar {

// The full action set, in the reference's order ['n','l','u','r','d','f'].
enum Action : int { kNoop = 0, kLeft = 1, kUp = 2, kRight = 3, kDown = 4, kFire = 5 };
inline constexpr int kNumFullActions = 6;
inline constexpr int kGridSize = 10;

struct Outcome {
  float reward = 0.0f;
  bool terminal = false;
};

// Writes into a zeroed [10][10][channels] observation, row (y) major as the
// reference's state() array: index (y * 10 + x) * channels + c.
inline void SetCell(std::uint8_t* grid, int channels, int y, int x, int c) {
  grid[(y * kGridSize + x) * channels + c] = 1;
}

struct MinAtarOptions {
  double sticky_action_prob = 0.1;
  bool difficulty_ramping = true;
  bool minimal_action_set = false;
  std::int64_t max_episode_steps = 0;  // the reference has no time limit
};

EnvSpec MinAtarSpec(const std::string& name, int channels, int num_actions,
                    std::int64_t max_episode_steps);

template <class Game>
class MinAtarEnv final : public Env {
 public:
  explicit MinAtarEnv(const MinAtarOptions& options)
      : Env(MinAtarSpec(std::string("MinAtar/") + Game::kName, Game::kChannels,
                        options.minimal_action_set ? static_cast<int>(Game::kMinimalActions.size())
                                                   : kNumFullActions,
                        options.max_episode_steps)),
        sticky_action_prob_(options.sticky_action_prob),
        minimal_action_set_(options.minimal_action_set),
        game_(options.difficulty_ramping) {}

 private:
  using Env::Advance;  // the continuous overload stays the base's (throws)

  void ResetState() override {
    // The reference keeps last_action across resets; we restart it at no-op so
    // that an episode depends only on its seed (documented in envs/README.md).
    last_action_ = kNoop;
    game_.Reset(rng());
  }

  Transition Advance(std::int64_t action) override {
    int a = minimal_action_set_ ? Game::kMinimalActions[action] : static_cast<int>(action);
    // The reference's Environment.act(): the draw happens on every step.
    if (rng().Uniform01() < sticky_action_prob_) a = last_action_;
    last_action_ = a;
    const Outcome o = game_.Act(a, rng());
    return {o.reward, o.terminal};
  }

  void WriteObservation(std::byte* out) const override {
    auto* grid = reinterpret_cast<std::uint8_t*>(out);
    std::memset(grid, 0, kGridSize * kGridSize * Game::kChannels);
    game_.WriteState(grid);
  }

  double sticky_action_prob_;
  bool minimal_action_set_;
  int last_action_ = kNoop;
  Game game_;
};

}  // namespace rlswarm::envs::minatar
