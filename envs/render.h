#pragma once

// Frames a person can look at: an observation drawn as an RGB image.
//   MinAtar/*     the 10x10 grid, one colour per channel (the highest set
//                 channel of a cell wins), cells `scale` pixels wide.
//   CartPole-v1   the track, the cart and the pole (angle and position from
//                 the observation), on a 600x400 canvas like Gymnasium's.
//   Pendulum-v1   the rod from its pivot at its angle, on a 500x500 canvas.
// Other envs: CanRender() is false.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "envs/spec.h"

namespace rlswarm::envs {

struct Image {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> rgb;  // row-major, 3 bytes per pixel
};

bool CanRender(const EnvSpec& spec);
// Throws InvalidArgument if the env cannot be rendered or the observation
// has the wrong size.
Image RenderObservation(const EnvSpec& spec, std::span<const std::byte> observation,
                        int scale = 24);

}  // namespace rlswarm::envs
