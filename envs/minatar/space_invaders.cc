#include "envs/minatar/space_invaders.h"

#include <algorithm>
#include <bit>

namespace rlswarm::envs::minatar {
namespace {

constexpr int kBottom = kGridSize - 1;
constexpr std::uint16_t kRowMask = (1u << kGridSize) - 1;
constexpr std::uint16_t kFormationRow = 0b0011111100;  // columns 2-7
constexpr int kFormationRows = 4;

constexpr std::uint16_t Bit(int x) { return static_cast<std::uint16_t>(1u << x); }

int CountCells(const SpaceInvaders::Rows& rows) {
  int n = 0;
  for (std::uint16_t row : rows) n += std::popcount(row);
  return n;
}

std::uint16_t OccupiedColumns(const SpaceInvaders::Rows& rows) {
  std::uint16_t columns = 0;
  for (std::uint16_t row : rows) columns |= row;
  return columns;
}

// np.roll along a row by +-1 (the edge rule keeps the wrapping column empty).
std::uint16_t RollColumns(std::uint16_t row, int dir) {
  const unsigned r = row;
  const unsigned rolled =
      dir > 0 ? (r << 1) | (r >> (kGridSize - 1)) : (r >> 1) | (r << (kGridSize - 1));
  return static_cast<std::uint16_t>(rolled & kRowMask);
}

void WriteRows(std::uint8_t* grid, const SpaceInvaders::Rows& rows, int channel) {
  for (int y = 0; y < kGridSize; ++y) {
    for (unsigned row = rows[y]; row != 0; row &= row - 1) {
      SetCell(grid, SpaceInvaders::kChannels, y, std::countr_zero(row), channel);
    }
  }
}

}  // namespace

SpaceInvaders::SpaceInvaders(bool difficulty_ramping) : ramping_(difficulty_ramping) {}

void SpaceInvaders::FillFormation(Rows& aliens) {
  for (int y = 0; y < kFormationRows; ++y) aliens[y] |= kFormationRow;
}

void SpaceInvaders::Reset(Rng& /*rng*/) {
  state_ = State{};
  FillFormation(state_.aliens);
}

Outcome SpaceInvaders::Act(int action, Rng& /*rng*/) {
  State& s = state_;
  Outcome out;
  if (s.terminal) {
    out.terminal = true;
    return out;
  }

  if (action == kFire && s.shot_timer == 0) {
    s.friendly_bullets[kBottom] |= Bit(s.pos);
    s.shot_timer = kShotCoolDown;
  } else if (action == kLeft) {
    s.pos = std::max(0, s.pos - 1);
  } else if (action == kRight) {
    s.pos = std::min(kBottom, s.pos + 1);
  }

  // Friendly bullets rise and leave at the top; enemy bullets fall and leave
  // at the bottom.
  std::copy(s.friendly_bullets.begin() + 1, s.friendly_bullets.end(), s.friendly_bullets.begin());
  s.friendly_bullets[kBottom] = 0;
  std::copy_backward(s.enemy_bullets.begin(), s.enemy_bullets.end() - 1, s.enemy_bullets.end());
  s.enemy_bullets[0] = 0;
  const std::uint16_t cannon = Bit(s.pos);
  if (s.enemy_bullets[kBottom] & cannon) s.terminal = true;

  if (s.aliens[kBottom] & cannon) s.terminal = true;
  if (s.alien_move_timer == 0) {
    s.alien_move_timer = std::min(CountCells(s.aliens), s.enemy_move_interval);
    const std::uint16_t columns = OccupiedColumns(s.aliens);
    if (((columns & Bit(0)) && s.alien_dir < 0) || ((columns & Bit(kBottom)) && s.alien_dir > 0)) {
      s.alien_dir = -s.alien_dir;
      if (s.aliens[kBottom] != 0) s.terminal = true;
      // Descend one row; like np.roll, the bottom row wraps to the top.
      std::rotate(s.aliens.rbegin(), s.aliens.rbegin() + 1, s.aliens.rend());
    } else {
      for (std::uint16_t& row : s.aliens) row = RollColumns(row, s.alien_dir);
    }
    if (s.aliens[kBottom] & cannon) s.terminal = true;
  }

  if (s.alien_shot_timer == 0) {
    s.alien_shot_timer = kEnemyShotInterval;
    // The reference sorts the columns by distance to the cannon (a stable
    // sort, so the left column wins a tie) and takes the first occupied one.
    const std::uint16_t columns = OccupiedColumns(s.aliens);
    for (int d = 0; d < kGridSize; ++d) {
      int x = -1;
      if (s.pos - d >= 0 && (columns & Bit(s.pos - d))) {
        x = s.pos - d;
      } else if (s.pos + d <= kBottom && (columns & Bit(s.pos + d))) {
        x = s.pos + d;
      }
      if (x < 0) continue;
      int y = kBottom;
      while (!(s.aliens[y] & Bit(x))) --y;  // the lowest alien of the column
      s.enemy_bullets[y] |= Bit(x);
      break;
    }
    // With no alien at all the reference fails; a step never starts that way
    // because an empty formation is respawned at the end of the step.
  }

  int kills = 0;
  for (int y = 0; y < kGridSize; ++y) {
    const std::uint16_t hit = s.aliens[y] & s.friendly_bullets[y];
    kills += std::popcount(hit);
    s.aliens[y] &= static_cast<std::uint16_t>(~hit);
    s.friendly_bullets[y] &= static_cast<std::uint16_t>(~hit);
  }
  out.reward = static_cast<float>(kills);

  if (s.shot_timer > 0) --s.shot_timer;
  --s.alien_move_timer;
  --s.alien_shot_timer;
  if (OccupiedColumns(s.aliens) == 0) {
    if (s.enemy_move_interval > kMinMoveInterval && ramping_) {
      --s.enemy_move_interval;
      ++s.ramp_index;
    }
    FillFormation(s.aliens);
  }
  out.terminal = s.terminal;
  return out;
}

void SpaceInvaders::WriteState(std::uint8_t* grid) const {
  const State& s = state_;
  SetCell(grid, kChannels, kBottom, s.pos, kCannonChannel);
  WriteRows(grid, s.aliens, kAlienChannel);
  WriteRows(grid, s.aliens, s.alien_dir < 0 ? kAlienLeftChannel : kAlienRightChannel);
  WriteRows(grid, s.friendly_bullets, kFriendlyBulletChannel);
  WriteRows(grid, s.enemy_bullets, kEnemyBulletChannel);
}

}  // namespace rlswarm::envs::minatar
