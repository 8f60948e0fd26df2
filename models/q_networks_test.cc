#include "models/q_networks.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/api/include/torch/version.h>

#include "common/errors.h"
#include "models/blas_check.h"
#include "models/q_network.h"

namespace rlswarm::models {
namespace {

TEST(QNetworksTest, MlpHasCartPoleShapes) {
  ModelSpec spec = MakeMlpSpec({});
  ASSERT_EQ(spec.layers.size(), 3u);
  EXPECT_EQ(spec.Numel(), 4 * 64 + 64 + 64 * 64 + 64 + 64 * 2 + 2);
  QNetwork net(spec, 1);
  EXPECT_EQ(net.Forward(at::rand({5, 4})).sizes(), (at::IntArrayRef{5, 2}));
}

TEST(QNetworksTest, MinAtarHasReferenceShapes) {
  ModelSpec spec = MakeMinAtarSpec({.in_channels = 4, .num_actions = 6});
  // conv 16x4x3x3 (+16) -> 16*8*8 = 1024 -> 128 -> 6.
  EXPECT_EQ(spec.Numel(), 16 * 4 * 9 + 16 + 1024 * 128 + 128 + 128 * 6 + 6);
  QNetwork net(spec, 1);
  EXPECT_EQ(net.Forward(at::rand({3, 4, 10, 10})).sizes(), (at::IntArrayRef{3, 6}));
}

TEST(QNetworksTest, NatureCnnHasTheNatureDqnShapesAndReadsPixels) {
  ModelSpec spec = MakeNatureCnnSpec({.in_channels = 4, .num_actions = 6});
  // 84 -> 20 -> 9 -> 7: 64 * 7 * 7 = 3136 -> 512 -> 6 (Mnih et al. 2015).
  EXPECT_EQ(spec.Numel(), 32 * 4 * 64 + 32 + 64 * 32 * 16 + 64 + 64 * 64 * 9 + 64 + 3136 * 512 +
                              512 + 512 * 6 + 6);
  EXPECT_EQ(spec.sample_shape, (std::vector<int64_t>{4, 84, 84}));
  QNetwork net(spec, 1);
  // Pixels are scaled by 1/255 inside: full-white frames give finite values.
  const at::Tensor q = net.Forward(at::full({2, 4, 84, 84}, 255.0));
  EXPECT_EQ(q.sizes(), (at::IntArrayRef{2, 6}));
  EXPECT_TRUE(at::isfinite(q).all().item<bool>());
  EXPECT_LT(q.abs().max().item<double>(), 10.0);
  EXPECT_THROW(MakeNatureCnnSpec({.height = 20}), InvalidArgument);
}

TEST(QNetworksTest, DuelingAdvantageHasZeroMeanEffect) {
  ModelSpec spec = MakeMlpSpec({.dueling = true});
  QNetwork net(spec, 3, at::kDouble);
  at::Tensor obs = at::rand({7, 4}, at::kDouble);
  at::Tensor q = net.Forward(obs);
  // Q - mean_a Q equals A - mean_a A, and mean_a Q equals V.
  NamedTensors p = net.NamedParameters();
  at::Tensor h = obs;
  for (int i = 0; i < 2; ++i) h = at::relu(at::linear(h, p[2 * i].second, p[2 * i + 1].second));
  at::Tensor v = at::linear(h, p[4].second, p[5].second);
  EXPECT_TRUE(at::allclose(q.mean({1}, true), v));
}

TEST(QNetworksTest, InitIsDeterministicPerSeedAndMatchesTorchBounds) {
  ModelSpec spec = MakeMlpSpec({});
  NamedTensors a = InitNamedParameters(spec, 42);
  NamedTensors b = InitNamedParameters(spec, 42);
  NamedTensors c = InitNamedParameters(spec, 43);
  ASSERT_EQ(a.size(), 6u);
  EXPECT_TRUE(at::equal(a[0].second, b[0].second));
  EXPECT_FALSE(at::equal(a[0].second, c[0].second));
  EXPECT_FALSE(at::equal(a[0].second, a[2].second.narrow(0, 0, 1).narrow(1, 0, 4)));
  EXPECT_LE(a[0].second.abs().max().item<double>(), 0.5);  // 1/sqrt(fan_in = 4)
}

TEST(QNetworksTest, LoadParametersRoundTripsAndChecksNames) {
  ModelSpec spec = MakeMlpSpec({});
  QNetwork a(spec, 1), b(spec, 2);
  b.LoadParameters(a.NamedParameters());
  at::Tensor obs = at::rand({4, 4});
  EXPECT_TRUE(at::equal(a.Forward(obs), b.Forward(obs)));
  EXPECT_THROW(b.LoadParameters({}), InvalidArgument);
}

TEST(QNetworksTest, OptionsRejectBadSizes) {
  EXPECT_THROW(MakeMlpSpec({.hidden_sizes = {0}}), InvalidArgument);
  EXPECT_THROW(MakeMinAtarSpec({.num_actions = 0}), InvalidArgument);
}

TEST(BlasCheckTest, MatmulsRunOnAFastBlas) {
  at::mm(at::rand({8, 8}), at::rand({8, 8}));
#if TORCH_VERSION_MAJOR >= 2
  // PyPI's LibTorch links MKL into libtorch_cpu (no BLAS library to map).
  EXPECT_TRUE(at::hasMKL()) << "loaded: " << LoadedBlasLibraries();
#else
  // Debian's alternatives pick OpenBLAS when libopenblas0 is installed; this
  // test fails loudly on a machine that silently uses reference BLAS.
  EXPECT_TRUE(OpenBlasLoaded()) << "loaded: " << LoadedBlasLibraries();
#endif
}

}  // namespace
}  // namespace rlswarm::models
