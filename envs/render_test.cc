#include "envs/render.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "common/errors.h"
#include "envs/registry.h"

namespace rlswarm::envs {
namespace {

std::array<std::uint8_t, 3> Pixel(const Image& image, int x, int y) {
  const std::size_t i = (static_cast<std::size_t>(y) * image.width + x) * 3;
  return {image.rgb[i], image.rgb[i + 1], image.rgb[i + 2]};
}

TEST(RenderTest, MinAtarCellsTakeTheColourOfTheirHighestChannel) {
  const EnvSpec spec = MakeEnv("MinAtar/Breakout")->spec();  // [10, 10, 4]
  std::vector<std::byte> obs(spec.observation.NumBytes(), std::byte{0});
  obs[(2 * 10 + 3) * 4 + 0] = std::byte{1};  // cell (y 2, x 3), channel 0
  obs[(5 * 10 + 5) * 4 + 1] = std::byte{1};  // cell (5, 5): channels 1 and 3
  obs[(5 * 10 + 5) * 4 + 3] = std::byte{1};
  const Image image = RenderObservation(spec, obs, 10);
  ASSERT_EQ(image.width, 100);
  ASSERT_EQ(image.height, 100);
  const auto empty = Pixel(image, 0 * 10 + 5, 0 * 10 + 5);
  const auto first = Pixel(image, 3 * 10 + 5, 2 * 10 + 5);
  const auto both = Pixel(image, 5 * 10 + 5, 5 * 10 + 5);
  EXPECT_NE(first, empty);
  EXPECT_NE(both, empty);
  EXPECT_NE(both, first);  // channel 3 wins over 1, and differs from 0
}

TEST(RenderTest, CartPoleDrawsThePoleAtItsAngle) {
  const EnvSpec spec = MakeEnv("CartPole-v1")->spec();
  auto draw = [&](float theta) {
    const float state[4] = {0, 0, theta, 0};
    return RenderObservation(spec, std::as_bytes(std::span(state)));
  };
  const Image upright = draw(0);
  const Image tilted = draw(0.5f);
  const std::array<std::uint8_t, 3> white = {255, 255, 255};
  // Straight above the cart at about half the pole's length.
  EXPECT_NE(Pixel(upright, 300, 300 - 30 - 60), white);
  EXPECT_EQ(Pixel(tilted, 300, 300 - 30 - 60), white);
  const int x = 300 + static_cast<int>(std::sin(0.5) * 62.5 * 2 * 0.5);
  const int y = 300 - 30 - static_cast<int>(std::cos(0.5) * 62.5 * 2 * 0.5);
  EXPECT_NE(Pixel(tilted, x, y), white);
}

TEST(RenderTest, PendulumDrawsTheRodAtItsAngle) {
  const EnvSpec spec = MakeEnv("Pendulum-v1")->spec();
  ASSERT_TRUE(CanRender(spec));
  auto draw = [&](float theta) {
    const float state[3] = {std::cos(theta), std::sin(theta), 0};
    return RenderObservation(spec, std::as_bytes(std::span(state)));
  };
  const std::array<std::uint8_t, 3> white = {255, 255, 255};
  const int half = static_cast<int>(0.5 * 250 / 2.2);  // half the rod's length
  const Image upright = draw(0);
  const Image hanging = draw(static_cast<float>(M_PI));
  EXPECT_NE(Pixel(upright, 250, 250 - half), white);
  EXPECT_EQ(Pixel(upright, 250, 250 + half), white);
  EXPECT_NE(Pixel(hanging, 250, 250 + half), white);
  EXPECT_EQ(Pixel(hanging, 250, 250 - half), white);
}

TEST(RenderTest, UnsupportedEnvsAndSizesAreRejected) {
  const EnvSpec acrobot = MakeEnv("Acrobot-v1")->spec();
  EXPECT_FALSE(CanRender(acrobot));
  std::vector<std::byte> obs(acrobot.observation.NumBytes());
  EXPECT_THROW(RenderObservation(acrobot, obs), InvalidArgument);
  const EnvSpec cartpole = MakeEnv("CartPole-v1")->spec();
  EXPECT_THROW(RenderObservation(cartpole, obs), InvalidArgument);  // 24 bytes, not 16
}

}  // namespace
}  // namespace rlswarm::envs
