#include "envs/minatar/breakout.h"

#include <algorithm>

namespace rlswarm::envs::minatar {
namespace {

// Per Direction: the step, and the direction after a reflection.
constexpr int kDx[4] = {-1, 1, 1, -1};
constexpr int kDy[4] = {-1, -1, 1, 1};
constexpr int kFlipX[4] = {1, 0, 3, 2};     // off a side wall
constexpr int kFlipY[4] = {3, 2, 1, 0};     // off the ceiling, a brick, the paddle's top
constexpr int kFlipBoth[4] = {2, 3, 0, 1};  // off the paddle's corner: back where it came from

constexpr int kFirstBrickRow = 1;
constexpr int kLastBrickRow = 3;
constexpr int kPaddleRow = kGridSize - 1;

}  // namespace

Breakout::Breakout(bool /*difficulty_ramping*/) {}

void Breakout::FillBrickRows() {
  for (int y = kFirstBrickRow; y <= kLastBrickRow; ++y) state_.bricks[y].fill(true);
}

bool Breakout::AnyBrick() const {
  for (const auto& row : state_.bricks) {
    for (bool b : row) {
      if (b) return true;
    }
  }
  return false;
}

void Breakout::Reset(Rng& rng) {
  State& s = state_;
  s = State{};
  // The reference draws randint(2): start at the left wall moving down-right,
  // or at the right wall moving down-left.
  if (rng.Below(2) == 0) {
    s.ball_x = 0;
    s.ball_dir = kDownRight;
  } else {
    s.ball_x = kGridSize - 1;
    s.ball_dir = kDownLeft;
  }
  s.ball_y = 3;
  s.last_x = s.ball_x;
  s.last_y = s.ball_y;
  FillBrickRows();
}

Outcome Breakout::Act(int action, Rng& /*rng*/) {
  State& s = state_;
  Outcome out;
  if (s.terminal) {
    out.terminal = true;
    return out;
  }

  if (action == kLeft) {
    s.paddle_x = std::max(0, s.paddle_x - 1);
  } else if (action == kRight) {
    s.paddle_x = std::min(kGridSize - 1, s.paddle_x + 1);
  }

  s.last_x = s.ball_x;
  s.last_y = s.ball_y;
  int new_x = s.ball_x + kDx[s.ball_dir];
  int new_y = s.ball_y + kDy[s.ball_dir];

  // The side wall is resolved first and independently: in a corner the ball
  // is reflected on both axes.
  if (new_x < 0 || new_x > kGridSize - 1) {
    new_x = std::clamp(new_x, 0, kGridSize - 1);
    s.ball_dir = kFlipX[s.ball_dir];
  }
  bool hit_brick = false;
  if (new_y < 0) {
    new_y = 0;
    s.ball_dir = kFlipY[s.ball_dir];
  } else if (s.bricks[new_y][new_x]) {
    hit_brick = true;
    if (!s.strike) {
      out.reward += 1.0f;
      s.strike = true;
      s.bricks[new_y][new_x] = false;
      new_y = s.last_y;
      s.ball_dir = kFlipY[s.ball_dir];
    }
  } else if (new_y == kPaddleRow) {
    if (!AnyBrick()) FillBrickRows();
    if (s.ball_x == s.paddle_x) {
      s.ball_dir = kFlipY[s.ball_dir];
      new_y = s.last_y;
    } else if (new_x == s.paddle_x) {
      s.ball_dir = kFlipBoth[s.ball_dir];
      new_y = s.last_y;
    } else {
      s.terminal = true;
    }
  }
  if (!hit_brick) s.strike = false;

  s.ball_x = new_x;
  s.ball_y = new_y;
  out.terminal = s.terminal;
  return out;
}

void Breakout::WriteState(std::uint8_t* grid) const {
  const State& s = state_;
  SetCell(grid, kChannels, s.ball_y, s.ball_x, kBallChannel);
  SetCell(grid, kChannels, kPaddleRow, s.paddle_x, kPaddleChannel);
  SetCell(grid, kChannels, s.last_y, s.last_x, kTrailChannel);
  for (int y = 0; y < kGridSize; ++y) {
    for (int x = 0; x < kGridSize; ++x) {
      grid[(y * kGridSize + x) * kChannels + kBrickChannel] = s.bricks[y][x];
    }
  }
}

}  // namespace rlswarm::envs::minatar
