#include "envs/minatar/seaquest.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace rlswarm::envs::minatar {
namespace {

constexpr int kLastColumn = kGridSize - 1;
constexpr int kGaugeRow = kGridSize - 1;
constexpr int kDeepestRow = kGridSize - 2;  // the sub stays above the gauges

bool OffGrid(int x) { return x < 0 || x > kLastColumn; }

// Moves one cell the way `right` says.
template <class T>
void Advance(T& thing) {
  thing.x = static_cast<std::int8_t>(thing.x + (thing.right ? 1 : -1));
}

// The reference's `for x in list: if x[0:2] == [px, py]`: the first (oldest)
// element in the cell, or -1.
template <class List>
int FindAt(const List& list, int x, int y) {
  for (int i = 0; i < list.size(); ++i) {
    if (list[i].x == x && list[i].y == y) return i;
  }
  return -1;
}

// The thing itself and the cell behind it (the trail), if on the grid.
template <class List>
void WriteMovers(std::uint8_t* grid, const List& list, int channel) {
  for (const auto& m : list) {
    SetCell(grid, Seaquest::kChannels, m.y, m.x, channel);
    const int back_x = m.right ? m.x - 1 : m.x + 1;
    if (!OffGrid(back_x)) SetCell(grid, Seaquest::kChannels, m.y, back_x, Seaquest::kTrailChannel);
  }
}

}  // namespace

void Seaquest::CapacityExceeded(int capacity) {
  std::fprintf(stderr, "Seaquest: a list exceeded its capacity %d (a bound is wrong)\n", capacity);
  std::abort();
}

Seaquest::Seaquest(bool difficulty_ramping) : ramping_(difficulty_ramping) {}

void Seaquest::Reset(Rng& /*rng*/) { state_ = State{}; }

// The reference draws rand() < 1/2 (direction), rand() < 1/3 (sub or fish),
// randint(1, 9) (row), in that order, and draws them even when it then skips
// the spawn.
void Seaquest::SpawnEnemy(Rng& rng) {
  State& s = state_;
  const bool right = rng.Bernoulli(1.0 / 2.0);
  const bool is_sub = rng.Bernoulli(1.0 / 3.0);
  const auto x = static_cast<std::int8_t>(right ? 0 : kLastColumn);
  const auto y = static_cast<std::int8_t>(rng.Integer(1, kGridSize - 1));
  // No spawn into a row where an enemy comes the other way.
  for (const EnemySub& e : s.subs) {
    if (e.y == y && e.right != right) return;
  }
  for (const Mover& e : s.fish) {
    if (e.y == y && e.right != right) return;
  }
  const auto timer = static_cast<std::int8_t>(s.move_interval);
  if (is_sub) {
    s.subs.Append({x, y, right, timer, static_cast<std::int8_t>(kEnemyShotInterval)});
  } else {
    s.fish.Append({x, y, right, timer});
  }
}

// rand() < 1/2 (direction), then randint(1, 9) (row).
void Seaquest::SpawnDiver(Rng& rng) {
  const bool right = rng.Bernoulli(1.0 / 2.0);
  const auto x = static_cast<std::int8_t>(right ? 0 : kLastColumn);
  const auto y = static_cast<std::int8_t>(rng.Integer(1, kGridSize - 1));
  state_.divers.Append({x, y, right, static_cast<std::int8_t>(kDiverMoveInterval)});
}

void Seaquest::MovePlayer(int action) {
  State& s = state_;
  if (action == kFire && s.shot_timer == 0) {
    s.friendly_bullets.Append(
        {static_cast<std::int8_t>(s.sub_x), static_cast<std::int8_t>(s.sub_y), s.sub_right});
    s.shot_timer = kShotCoolDown;
  } else if (action == kLeft) {
    s.sub_x = std::max(0, s.sub_x - 1);
    s.sub_right = false;
  } else if (action == kRight) {
    s.sub_x = std::min(kLastColumn, s.sub_x + 1);
    s.sub_right = true;
  } else if (action == kUp) {
    s.sub_y = std::max(0, s.sub_y - 1);
  } else if (action == kDown) {
    s.sub_y = std::min(kDeepestRow, s.sub_y + 1);
  }
}

// Each Update* walks its list as the reference's `for e in reversed(list)`
// does: by index from the back. list.remove(e) erases the first element equal
// to e, which is e itself unless an older element is equal to it; then e
// slides to index i - 1 and, as in Python, is visited again.

int Seaquest::UpdateFriendlyBullets() {
  State& s = state_;
  int reward = 0;
  for (int i = s.friendly_bullets.size() - 1; i >= 0; --i) {
    Bullet& b = s.friendly_bullets[i];
    Advance(b);
    if (OffGrid(b.x)) {
      s.friendly_bullets.Remove(b);
      continue;
    }
    if (const int k = FindAt(s.fish, b.x, b.y); k >= 0) {
      s.fish.EraseAt(k);
      s.friendly_bullets.Remove(b);
      ++reward;
    } else if (const int j = FindAt(s.subs, b.x, b.y); j >= 0) {
      s.subs.EraseAt(j);
      s.friendly_bullets.Remove(b);
      ++reward;
    }
  }
  return reward;
}

void Seaquest::UpdateDivers() {
  State& s = state_;
  for (int i = s.divers.size() - 1; i >= 0; --i) {
    Mover& d = s.divers[i];
    if (AtPlayer(d.x, d.y) && s.diver_count < kMaxDivers) {
      s.divers.Remove(d);
      ++s.diver_count;
    } else if (d.move_timer == 0) {
      d.move_timer = kDiverMoveInterval;
      Advance(d);
      if (OffGrid(d.x)) {
        s.divers.Remove(d);
      } else if (AtPlayer(d.x, d.y) && s.diver_count < kMaxDivers) {
        s.divers.Remove(d);
        ++s.diver_count;
      }
    } else {
      --d.move_timer;
    }
  }
}

int Seaquest::UpdateEnemySubs() {
  State& s = state_;
  int reward = 0;
  for (int i = s.subs.size() - 1; i >= 0; --i) {
    EnemySub* sub = &s.subs[i];
    // A removed sub keeps updating its shot timer, as the reference's loop
    // body goes on with the removed object. (Had list.remove taken an older
    // equal sub instead, this one slid to i - 1 and is still listed.)
    EnemySub removed{};
    auto remove = [&] {
      removed = *sub;
      sub = s.subs.Remove(removed) == i ? &removed : &s.subs[i - 1];
    };
    if (AtPlayer(sub->x, sub->y)) s.terminal = true;
    if (sub->move_timer == 0) {
      sub->move_timer = static_cast<std::int8_t>(s.move_interval);
      Advance(*sub);
      if (OffGrid(sub->x)) {
        remove();
      } else if (AtPlayer(sub->x, sub->y)) {
        s.terminal = true;
      } else if (const int k = FindAt(s.friendly_bullets, sub->x, sub->y); k >= 0) {
        remove();
        s.friendly_bullets.EraseAt(k);
        ++reward;
      }
    } else {
      --sub->move_timer;
    }
    if (sub->shot_timer == 0) {
      sub->shot_timer = kEnemyShotInterval;
      s.enemy_bullets.Append({sub->x, sub->y, sub->right});
    } else {
      --sub->shot_timer;
    }
  }
  return reward;
}

void Seaquest::UpdateEnemyBullets() {
  State& s = state_;
  for (int i = s.enemy_bullets.size() - 1; i >= 0; --i) {
    Bullet& b = s.enemy_bullets[i];
    if (AtPlayer(b.x, b.y)) s.terminal = true;
    Advance(b);
    if (OffGrid(b.x)) {
      s.enemy_bullets.Remove(b);
    } else if (AtPlayer(b.x, b.y)) {
      s.terminal = true;
    }
  }
}

int Seaquest::UpdateEnemyFish() {
  State& s = state_;
  int reward = 0;
  for (int i = s.fish.size() - 1; i >= 0; --i) {
    Mover& f = s.fish[i];
    if (AtPlayer(f.x, f.y)) s.terminal = true;
    if (f.move_timer == 0) {
      f.move_timer = static_cast<std::int8_t>(s.move_interval);
      Advance(f);
      if (OffGrid(f.x)) {
        s.fish.Remove(f);
      } else if (AtPlayer(f.x, f.y)) {
        s.terminal = true;
      } else if (const int k = FindAt(s.friendly_bullets, f.x, f.y); k >= 0) {
        s.fish.Remove(f);
        s.friendly_bullets.EraseAt(k);
        ++reward;
      }
    } else {
      --f.move_timer;
    }
  }
  return reward;
}

int Seaquest::Surface() {
  State& s = state_;
  s.surfaced = true;
  int reward = 0;
  if (s.diver_count == kMaxDivers) {
    s.diver_count = 0;
    reward = s.oxygen * 10 / kMaxOxygen;  // oxygen >= 0 here: no floor/trunc gap
  }
  s.oxygen = kMaxOxygen;
  --s.diver_count;
  if (ramping_ && (s.enemy_spawn_interval > 1 || s.move_interval > 2)) {
    if (s.move_interval > 2 && s.ramp_index % 2 == 1) --s.move_interval;
    if (s.enemy_spawn_interval > 1) --s.enemy_spawn_interval;
    ++s.ramp_index;
  }
  return reward;
}

Outcome Seaquest::Act(int action, Rng& rng) {
  State& s = state_;
  Outcome out;
  if (s.terminal) {
    out.terminal = true;
    return out;
  }

  if (s.enemy_spawn_timer == 0) {
    SpawnEnemy(rng);
    s.enemy_spawn_timer = s.enemy_spawn_interval;
  }
  if (s.diver_spawn_timer == 0) {
    SpawnDiver(rng);
    s.diver_spawn_timer = kDiverSpawnInterval;
  }

  MovePlayer(action);
  int reward = UpdateFriendlyBullets();
  UpdateDivers();
  reward += UpdateEnemySubs();
  UpdateEnemyBullets();
  reward += UpdateEnemyFish();

  if (s.enemy_spawn_timer > 0) --s.enemy_spawn_timer;
  if (s.diver_spawn_timer > 0) --s.diver_spawn_timer;
  if (s.shot_timer > 0) --s.shot_timer;
  if (s.oxygen <= 0) s.terminal = true;
  if (s.sub_y > 0) {
    --s.oxygen;
    s.surfaced = false;
  } else if (!s.surfaced) {
    if (s.diver_count == 0) {
      s.terminal = true;
    } else {
      reward += Surface();
    }
  }
  out.reward = static_cast<float>(reward);
  out.terminal = s.terminal;
  return out;
}

void Seaquest::WriteState(std::uint8_t* grid) const {
  const State& s = state_;
  SetCell(grid, kChannels, s.sub_y, s.sub_x, kSubFrontChannel);
  // The back cell is always on the grid: the sub faces right only after a
  // move right, so it is never at x = 0 facing right (nor at x = 9 facing
  // left).
  const int back_x = s.sub_right ? s.sub_x - 1 : s.sub_x + 1;
  if (!OffGrid(back_x)) SetCell(grid, kChannels, s.sub_y, back_x, kSubBackChannel);
  const int oxygen_cells = std::max(0, s.oxygen) * 10 / kMaxOxygen;
  for (int x = 0; x < oxygen_cells; ++x)
    SetCell(grid, kChannels, kGaugeRow, x, kOxygenGaugeChannel);
  // Columns 9 - diver_count .. 8, none when diver_count <= 0.
  for (int x = kLastColumn - std::clamp(s.diver_count, 0, kLastColumn); x < kLastColumn; ++x) {
    SetCell(grid, kChannels, kGaugeRow, x, kDiverGaugeChannel);
  }
  for (const Bullet& b : s.friendly_bullets)
    SetCell(grid, kChannels, b.y, b.x, kFriendlyBulletChannel);
  for (const Bullet& b : s.enemy_bullets) SetCell(grid, kChannels, b.y, b.x, kEnemyBulletChannel);
  WriteMovers(grid, s.fish, kEnemyFishChannel);
  WriteMovers(grid, s.subs, kEnemySubChannel);
  WriteMovers(grid, s.divers, kDiverChannel);
}

}  // namespace rlswarm::envs::minatar
