// Recorded episodes as animated GIFs, decoded with giflib.

#include "observe/gif_writer.h"

#include <gif_lib.h>
#include <gtest/gtest.h>

#include <array>
#include <filesystem>

#include "common/errors.h"
#include "common/testing/files.h"

namespace rlswarm::observe {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// Animated GIFs of recorded episodes.

envs::Image SolidFrame(int width, int height, std::array<std::uint8_t, 3> colour) {
  envs::Image image{width, height, {}};
  for (int i = 0; i < width * height; ++i)
    image.rgb.insert(image.rgb.end(), colour.begin(), colour.end());
  return image;
}

// A decoded GIF; closed by the destructor.
class DecodedGif {
 public:
  explicit DecodedGif(const std::string& path) {
    int error = 0;
    gif_ = DGifOpenFileName(path.c_str(), &error);
    if (!gif_) throw std::runtime_error("cannot open " + path + ": " + GifErrorString(error));
    if (DGifSlurp(gif_) != GIF_OK) {
      const std::string why = GifErrorString(gif_->Error);
      DGifCloseFile(gif_, &error);
      throw std::runtime_error("cannot decode " + path + ": " + why);
    }
  }
  ~DecodedGif() {
    int ignored = 0;
    DGifCloseFile(gif_, &ignored);
  }
  const GifFileType& operator*() const { return *gif_; }
  GifFileType* get() const { return gif_; }

  // Frame `i`'s pixel (x, y), through its own palette or the global one.
  std::array<std::uint8_t, 3> Pixel(int i, int x, int y) const {
    const SavedImage& frame = gif_->SavedImages[i];
    const ColorMapObject* map =
        frame.ImageDesc.ColorMap ? frame.ImageDesc.ColorMap : gif_->SColorMap;
    const GifColorType c = map->Colors[frame.RasterBits[y * frame.ImageDesc.Width + x]];
    return {c.Red, c.Green, c.Blue};
  }

 private:
  GifFileType* gif_ = nullptr;
};

TEST(GifWriterTest, WritesFramesThatReadBackWithTheirColoursAndDelay) {
  const testing::TempDir temp("rlswarm_observe");
  const fs::path dir(temp.path());
  const std::string path = (dir / "episode-0000.gif").string();
  GifWriter writer(path, 4);
  writer.AddFrame(SolidFrame(6, 4, {255, 0, 0}));
  envs::Image second = SolidFrame(6, 4, {10, 20, 30});
  second.rgb[(1 * 6 + 2) * 3 + 1] = 200;  // pixel (2, 1): (10, 200, 30)
  writer.AddFrame(second);
  writer.AddFrame(SolidFrame(6, 4, {0, 0, 255}));
  EXPECT_FALSE(fs::exists(path));  // only PATH.tmp until Close()
  writer.Close();
  EXPECT_EQ(writer.frames(), 3);
  EXPECT_FALSE(fs::exists(path + ".tmp"));

  const DecodedGif gif(path);
  EXPECT_EQ((*gif).ImageCount, 3);
  EXPECT_EQ((*gif).SWidth, 6);
  EXPECT_EQ((*gif).SHeight, 4);
  EXPECT_EQ(gif.Pixel(0, 5, 3), (std::array<std::uint8_t, 3>{255, 0, 0}));
  EXPECT_EQ(gif.Pixel(1, 2, 1), (std::array<std::uint8_t, 3>{10, 200, 30}));
  EXPECT_EQ(gif.Pixel(1, 3, 1), (std::array<std::uint8_t, 3>{10, 20, 30}));
  EXPECT_EQ(gif.Pixel(2, 0, 0), (std::array<std::uint8_t, 3>{0, 0, 255}));
  for (int i = 0; i < 3; ++i) {
    GraphicsControlBlock control;
    ASSERT_EQ(DGifSavedExtensionToGCB(gif.get(), i, &control), GIF_OK) << i;
    EXPECT_EQ(control.DelayTime, 4) << i;
  }
}

TEST(GifWriterTest, QuantizesAFrameOfManyColoursToTheCube) {
  envs::Image frame{32, 32, {}};
  for (int y = 0; y < 32; ++y) {
    for (int x = 0; x < 32; ++x) {
      frame.rgb.insert(frame.rgb.end(),
                       {static_cast<std::uint8_t>(x * 8), static_cast<std::uint8_t>(y * 8),
                        static_cast<std::uint8_t>(255 - x * 4)});
    }
  }
  const IndexedFrame indexed = QuantizeFrame(frame);  // 1024 colours
  EXPECT_LE(indexed.palette.size(), 256u);
  const testing::TempDir temp("rlswarm_observe");
  const fs::path dir(temp.path());
  const std::string path = (dir / "gradient.gif").string();
  GifWriter writer(path, 2);
  writer.AddFrame(frame);
  writer.Close();
  const DecodedGif gif(path);
  ASSERT_EQ((*gif).ImageCount, 1);
  // Within half a cube step (255 / 5 / 2 for red and blue) of the original.
  for (int y = 0; y < 32; y += 5) {
    for (int x = 0; x < 32; x += 3) {
      const std::array<std::uint8_t, 3> p = gif.Pixel(0, x, y);
      const std::uint8_t* want = &frame.rgb[(y * 32 + x) * 3];
      for (int c = 0; c < 3; ++c) EXPECT_LE(std::abs(p[c] - want[c]), 26) << x << "," << y;
    }
  }
}

TEST(GifWriterTest, RefusesBadFramesAndNamesABadPath) {
  const testing::TempDir temp("rlswarm_observe");
  const fs::path dir(temp.path());
  const std::string path = (dir / "bad.gif").string();
  {
    GifWriter writer(path, 2);
    writer.AddFrame(SolidFrame(4, 4, {1, 2, 3}));
    EXPECT_THROW(writer.AddFrame(SolidFrame(5, 4, {1, 2, 3})), InvalidArgument);
    EXPECT_THROW(writer.AddFrame(envs::Image{4, 4, {}}), InvalidArgument);
  }
  // Destroyed before Close(): nothing left behind.
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  {
    GifWriter empty(path, 2);
    EXPECT_THROW(empty.Close(), FailedPrecondition);
  }
  EXPECT_THROW(GifWriter(path, 0), InvalidArgument);

  const std::string unwritable = "/nonexistent-rlswarm-dir/episode-0000.gif";
  try {
    GifWriter writer(unwritable, 2);
    FAIL() << "no Unavailable";
  } catch (const Unavailable& e) {
    EXPECT_NE(std::string(e.what()).find(unwritable), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rlswarm::observe
