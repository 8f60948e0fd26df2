#include "envs/minatar/freeway.h"

#include <algorithm>
#include <cstdlib>

namespace rlswarm::envs::minatar {

Freeway::Freeway(bool /*difficulty_ramping*/) {}

void Freeway::RandomizeCars(Rng& rng, bool place) {
  // The reference draws all eight speeds, randint(1, 6, 8), then all eight
  // directions, sign(rand(8) - 0.5).
  std::array<int, kNumCars> speeds;
  for (int& v : speeds) v = static_cast<int>(rng.Integer(1, 6));
  for (int& v : speeds) {
    // sign() is 0 when rand() returns exactly 0.5 (probability 2^-53), which
    // would give a car of speed 0 that the reference cannot draw; we count
    // 0.5 as positive instead.
    if (rng.Uniform01() < 0.5) v = -v;
  }
  for (int i = 0; i < kNumCars; ++i) {
    Car& car = state_.cars[i];
    if (place) {
      car.x = 0;
      car.y = i + 1;
    }
    car.timer = std::abs(speeds[i]);
    car.speed = speeds[i];
  }
}

void Freeway::Reset(Rng& rng) {
  state_ = State{};
  RandomizeCars(rng, /*place=*/true);
}

Outcome Freeway::Act(int action, Rng& rng) {
  State& s = state_;
  Outcome out;
  if (s.terminal) {
    out.terminal = true;
    return out;
  }

  if (action == kUp && s.move_timer == 0) {
    s.move_timer = kPlayerSpeed;
    s.chicken_y = std::max(0, s.chicken_y - 1);
  } else if (action == kDown && s.move_timer == 0) {
    s.move_timer = kPlayerSpeed;
    s.chicken_y = std::min(kGridSize - 1, s.chicken_y + 1);
  }

  if (s.chicken_y == 0) {
    out.reward += 1.0f;
    RandomizeCars(rng, /*place=*/false);
    s.chicken_y = kGridSize - 1;
  }

  for (Car& car : s.cars) {
    if (car.x == kChickenX && car.y == s.chicken_y) s.chicken_y = kGridSize - 1;
    if (car.timer == 0) {
      car.timer = std::abs(car.speed);
      car.x += car.speed > 0 ? 1 : -1;
      if (car.x < 0) {
        car.x = kGridSize - 1;
      } else if (car.x > kGridSize - 1) {
        car.x = 0;
      }
      if (car.x == kChickenX && car.y == s.chicken_y) s.chicken_y = kGridSize - 1;
    } else {
      --car.timer;
    }
  }

  if (s.move_timer > 0) --s.move_timer;
  --s.terminate_timer;
  if (s.terminate_timer < 0) s.terminal = true;
  out.terminal = s.terminal;
  return out;
}

void Freeway::WriteState(std::uint8_t* grid) const {
  const State& s = state_;
  SetCell(grid, kChannels, s.chicken_y, kChickenX, kChickenChannel);
  for (const Car& car : s.cars) {
    SetCell(grid, kChannels, car.y, car.x, kCarChannel);
    int back_x = car.speed > 0 ? car.x - 1 : car.x + 1;
    if (back_x < 0) {
      back_x = kGridSize - 1;
    } else if (back_x > kGridSize - 1) {
      back_x = 0;
    }
    SetCell(grid, kChannels, car.y, back_x, kSpeed1Channel + std::abs(car.speed) - 1);
  }
}

}  // namespace rlswarm::envs::minatar
