#include "envs/render.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "common/errors.h"

namespace rlswarm::envs {
namespace {

using Rgb = std::array<std::uint8_t, 3>;

// A qualitative palette (ColorBrewer Set1/Dark2), for up to 10 channels.
constexpr Rgb kPalette[] = {{228, 26, 28},  {55, 126, 184}, {77, 175, 74}, {152, 78, 163},
                            {255, 127, 0},  {255, 255, 51}, {166, 86, 40}, {247, 129, 191},
                            {27, 158, 119}, {117, 112, 179}};
constexpr Rgb kBackground = {20, 20, 20};

bool IsMinAtar(const EnvSpec& spec) {
  return spec.name.rfind("MinAtar/", 0) == 0 && spec.observation.shape.size() == 3;
}

void Fill(Image& image, int x0, int y0, int x1, int y1, Rgb color) {
  x0 = std::max(x0, 0);
  y0 = std::max(y0, 0);
  x1 = std::min(x1, image.width);
  y1 = std::min(y1, image.height);
  for (int y = y0; y < y1; ++y) {
    for (int x = x0; x < x1; ++x) {
      std::memcpy(&image.rgb[(static_cast<std::size_t>(y) * image.width + x) * 3], color.data(), 3);
    }
  }
}

Image RenderMinAtar(const EnvSpec& spec, std::span<const std::byte> obs, int scale) {
  const auto rows = static_cast<int>(spec.observation.shape[0]);
  const auto cols = static_cast<int>(spec.observation.shape[1]);
  const auto channels = static_cast<int>(spec.observation.shape[2]);
  Image image{cols * scale, rows * scale, {}};
  image.rgb.assign(static_cast<std::size_t>(image.width) * image.height * 3, 0);
  Fill(image, 0, 0, image.width, image.height, kBackground);
  for (int y = 0; y < rows; ++y) {
    for (int x = 0; x < cols; ++x) {
      for (int c = channels - 1; c >= 0; --c) {
        if (obs[(static_cast<std::size_t>(y) * cols + x) * channels + c] != std::byte{0}) {
          // A 1-pixel gap keeps neighbouring cells apart.
          Fill(image, x * scale + 1, y * scale + 1, (x + 1) * scale - 1, (y + 1) * scale - 1,
               kPalette[c % 10]);
          break;
        }
      }
    }
  }
  return image;
}

Image RenderCartPole(std::span<const std::byte> obs) {
  float state[4];
  std::memcpy(state, obs.data(), sizeof(state));
  const float x = state[0];
  const float theta = state[2];
  Image image{600, 400, {}};
  image.rgb.assign(600 * 400 * 3, 255);
  const double world_width = 2 * 2.4;  // Gymnasium's x_threshold * 2
  const double pixels_per_unit = 600 / world_width;
  const int track_y = 300;
  Fill(image, 0, track_y, 600, track_y + 1, {0, 0, 0});
  const int cart_x = static_cast<int>(x * pixels_per_unit + 300);
  Fill(image, cart_x - 25, track_y - 30, cart_x + 25, track_y, {0, 0, 0});
  // The pole: 1.0 long in Gymnasium units (2 * half-length 0.5), drawn as
  // a thick line from the top of the cart.
  const double length = 1.0 * pixels_per_unit;
  const int steps = static_cast<int>(length);
  for (int i = 0; i <= steps; ++i) {
    const double t = static_cast<double>(i) / steps;
    const int px = cart_x + static_cast<int>(std::sin(theta) * length * t);
    const int py = track_y - 30 - static_cast<int>(std::cos(theta) * length * t);
    Fill(image, px - 4, py - 4, px + 5, py + 5, {202, 152, 101});
  }
  Fill(image, cart_x - 3, track_y - 33, cart_x + 3, track_y - 27, {129, 132, 203});
  return image;
}

// Pendulum-v1 as Gymnasium draws it: a rod from the pivot at the centre of
// a 500x500 canvas, at angle theta from upright (observation [cos, sin,
// theta dot]), length 1 in units of 2.2 per half-canvas.
Image RenderPendulum(std::span<const std::byte> obs) {
  float state[3];
  std::memcpy(state, obs.data(), sizeof(state));
  const double theta = std::atan2(state[1], state[0]);
  Image image{500, 500, {}};
  image.rgb.assign(500 * 500 * 3, 255);
  const int cx = 250, cy = 250;
  const double length = 1.0 * 250 / 2.2;
  const int steps = static_cast<int>(length);
  for (int i = 0; i <= steps; ++i) {
    const double t = static_cast<double>(i) / steps;
    // Upright (theta 0) points up; positive theta turns counter-clockwise.
    const int px = cx - static_cast<int>(std::sin(theta) * length * t);
    const int py = cy - static_cast<int>(std::cos(theta) * length * t);
    Fill(image, px - 10, py - 10, px + 11, py + 11, {204, 77, 77});
  }
  Fill(image, cx - 5, cy - 5, cx + 6, cy + 6, {0, 0, 0});
  return image;
}

}  // namespace

bool CanRender(const EnvSpec& spec) {
  return IsMinAtar(spec) || spec.name == "CartPole-v1" || spec.name == "Pendulum-v1";
}

Image RenderObservation(const EnvSpec& spec, std::span<const std::byte> observation, int scale) {
  if (!CanRender(spec)) {
    throw InvalidArgument("cannot render " + spec.name +
                          " (rendering supports CartPole-v1, Pendulum-v1 and the MinAtar games)");
  }
  if (observation.size() != spec.observation.NumBytes()) {
    throw InvalidArgument("render: observation of " + std::to_string(observation.size()) +
                          " bytes for " + spec.name);
  }
  if (scale < 1 || scale > 256) throw InvalidArgument("render: scale must be in [1, 256]");
  if (IsMinAtar(spec)) return RenderMinAtar(spec, observation, scale);
  return spec.name == "Pendulum-v1" ? RenderPendulum(observation) : RenderCartPole(observation);
}

}  // namespace rlswarm::envs
