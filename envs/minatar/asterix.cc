#include "envs/minatar/asterix.h"

#include <algorithm>

namespace rlswarm::envs::minatar {

void Asterix::Reset(Rng& /*rng*/) { state_ = State{}; }

void Asterix::SpawnEntity(Rng& rng) {
  // The reference's draws, in its order: rand() < 1/2, rand() < 1/3, then
  // randint(number of free slots) only if there is a free slot.
  const bool moving_right = rng.Bernoulli(0.5);
  const bool gold = rng.Bernoulli(1.0 / 3.0);
  std::array<int, kNumSlots> free_slots;
  int num_free = 0;
  for (int i = 0; i < kNumSlots; ++i) {
    if (!state_.entities[i]) free_slots[num_free++] = i;
  }
  if (num_free == 0) return;
  const int slot = free_slots[rng.Below(static_cast<std::uint64_t>(num_free))];
  state_.entities[slot] = Entity{moving_right ? 0 : kGridSize - 1, moving_right, gold};
}

void Asterix::Collide(int i, Outcome& out) {
  State& s = state_;
  const Entity& e = *s.entities[i];
  if (e.x != s.player_x || i + 1 != s.player_y) return;
  if (e.gold) {
    s.entities[i].reset();
    out.reward += 1.0f;
  } else {
    s.terminal = true;
  }
}

Outcome Asterix::Act(int action, Rng& rng) {
  State& s = state_;
  Outcome out;
  if (s.terminal) {
    out.terminal = true;
    return out;
  }

  if (s.spawn_timer == 0) {
    SpawnEntity(rng);
    s.spawn_timer = s.spawn_speed;
  }

  switch (action) {
    case kLeft:
      s.player_x = std::max(0, s.player_x - 1);
      break;
    case kRight:
      s.player_x = std::min(kGridSize - 1, s.player_x + 1);
      break;
    case kUp:
      s.player_y = std::max(1, s.player_y - 1);
      break;
    case kDown:
      s.player_y = std::min(kGridSize - 2, s.player_y + 1);
      break;
    default:
      break;
  }

  // An enemy collision does not stop the step: later gold still counts and
  // the entities still move, as in the reference.
  for (int i = 0; i < kNumSlots; ++i) {
    if (s.entities[i]) Collide(i, out);
  }
  if (s.move_timer == 0) {
    s.move_timer = s.move_speed;
    for (int i = 0; i < kNumSlots; ++i) {
      if (!s.entities[i]) continue;
      Entity& e = *s.entities[i];
      e.x += e.moving_right ? 1 : -1;
      if (e.x < 0 || e.x > kGridSize - 1) {
        s.entities[i].reset();
      } else {
        Collide(i, out);
      }
    }
  }

  --s.spawn_timer;
  --s.move_timer;

  if (ramping_ && (s.spawn_speed > 1 || s.move_speed > 1)) {
    if (s.ramp_timer >= 0) {
      --s.ramp_timer;
    } else {
      if (s.move_speed > 1 && s.ramp_index % 2 == 1) --s.move_speed;
      if (s.spawn_speed > 1) --s.spawn_speed;
      ++s.ramp_index;
      s.ramp_timer = kRampInterval;
    }
  }
  out.terminal = s.terminal;
  return out;
}

void Asterix::WriteState(std::uint8_t* grid) const {
  const State& s = state_;
  SetCell(grid, kChannels, s.player_y, s.player_x, kPlayerChannel);
  for (int i = 0; i < kNumSlots; ++i) {
    if (!s.entities[i]) continue;
    const Entity& e = *s.entities[i];
    const int y = i + 1;
    SetCell(grid, kChannels, y, e.x, e.gold ? kGoldChannel : kEnemyChannel);
    const int back_x = e.moving_right ? e.x - 1 : e.x + 1;
    if (back_x >= 0 && back_x <= kGridSize - 1) SetCell(grid, kChannels, y, back_x, kTrailChannel);
  }
}

}  // namespace rlswarm::envs::minatar
