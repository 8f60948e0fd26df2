#include "observe/gif_writer.h"

#include <fcntl.h>
#include <gif_lib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <unordered_map>

#include "common/errors.h"

namespace rlswarm::observe {
namespace {

GifFileType* AsGif(void* gif) { return static_cast<GifFileType*>(gif); }

std::string GifError(int error) {
  const char* text = GifErrorString(error);
  return text ? text : "giflib error " + std::to_string(error);
}

// The cube's levels per channel: 6 x 7 x 6 = 252 colours.
constexpr int kRedLevels = 6, kGreenLevels = 7, kBlueLevels = 6;

int Level(std::uint8_t value, int levels) { return (value * (levels - 1) + 127) / 255; }
std::uint8_t LevelValue(int level, int levels) {
  return static_cast<std::uint8_t>(level * 255 / (levels - 1));
}

}  // namespace

IndexedFrame QuantizeFrame(const envs::Image& frame) {
  const std::size_t pixels = static_cast<std::size_t>(frame.width) * frame.height;
  IndexedFrame out;
  out.indices.resize(pixels);
  std::unordered_map<std::uint32_t, std::uint8_t> index_of;
  bool exact = true;
  for (std::size_t i = 0; i < pixels && exact; ++i) {
    const std::uint8_t* p = &frame.rgb[i * 3];
    const std::uint32_t key = (p[0] << 16) | (p[1] << 8) | p[2];
    auto [it, added] = index_of.try_emplace(key, static_cast<std::uint8_t>(out.palette.size()));
    if (added) {
      if (out.palette.size() == 256) {
        exact = false;
        break;
      }
      out.palette.push_back({p[0], p[1], p[2]});
    }
    out.indices[i] = it->second;
  }
  if (exact) return out;

  out.palette.clear();
  for (int r = 0; r < kRedLevels; ++r) {
    for (int g = 0; g < kGreenLevels; ++g) {
      for (int b = 0; b < kBlueLevels; ++b) {
        out.palette.push_back(
            {LevelValue(r, kRedLevels), LevelValue(g, kGreenLevels), LevelValue(b, kBlueLevels)});
      }
    }
  }
  for (std::size_t i = 0; i < pixels; ++i) {
    const std::uint8_t* p = &frame.rgb[i * 3];
    out.indices[i] = static_cast<std::uint8_t>(
        (Level(p[0], kRedLevels) * kGreenLevels + Level(p[1], kGreenLevels)) * kBlueLevels +
        Level(p[2], kBlueLevels));
  }
  return out;
}

GifWriter::GifWriter(std::string path, int frame_delay_cs)
    : path_(std::move(path)), tmp_path_(path_ + ".tmp"), frame_delay_cs_(frame_delay_cs) {
  if (frame_delay_cs < 1 || frame_delay_cs > 65535) {
    throw InvalidArgument("GIF frame delay " + std::to_string(frame_delay_cs) +
                          " cs is outside [1, 65535]");
  }
  // Opened here rather than by EGifOpenFileName, which creates files
  // readable by their owner alone; this way the umask decides, as for PNGs.
  const int fd = ::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw Unavailable("cannot write " + tmp_path_ + ": " + std::strerror(errno));
  int error = 0;
  gif_ = EGifOpenFileHandle(fd, &error);  // EGifCloseFile closes fd
  if (!gif_) {
    // giflib fails here only allocating, before it takes fd over.
    ::close(fd);
    std::remove(tmp_path_.c_str());
    throw Unavailable("cannot write " + tmp_path_ + ": " + GifError(error));
  }
  // giflib writes "GIF87a" unless told, and 87a has no delays or looping.
  EGifSetGifVersion(AsGif(gif_), true);
}

GifWriter::~GifWriter() {
  if (!gif_) return;
  int ignored = 0;
  EGifCloseFile(AsGif(gif_), &ignored);
  std::remove(tmp_path_.c_str());
}

void GifWriter::Fail(const std::string& what, int error) {
  int ignored = 0;
  EGifCloseFile(AsGif(gif_), &ignored);
  gif_ = nullptr;
  std::remove(tmp_path_.c_str());
  throw Unavailable("cannot write " + path_ + " (" + what + "): " + GifError(error));
}

void GifWriter::AddFrame(const envs::Image& frame) {
  if (!gif_) throw FailedPrecondition("GIF " + path_ + " is closed");
  if (frame.width <= 0 || frame.height <= 0 || frame.width > 65535 || frame.height > 65535 ||
      frame.rgb.size() != static_cast<std::size_t>(frame.width) * frame.height * 3) {
    throw InvalidArgument("GIF frame of " + std::to_string(frame.width) + "x" +
                          std::to_string(frame.height) + " with " +
                          std::to_string(frame.rgb.size()) + " bytes for " + path_);
  }
  GifFileType* gif = AsGif(gif_);
  if (frames_ == 0) {
    width_ = frame.width, height_ = frame.height;
    // No global palette: every frame carries its own.
    if (EGifPutScreenDesc(gif, width_, height_, 8, 0, nullptr) == GIF_ERROR) {
      Fail("screen descriptor", gif->Error);
    }
    // NETSCAPE2.0 with a loop count of 0: loop forever.
    static const GifByteType kLoop[] = {1, 0, 0};
    if (EGifPutExtensionLeader(gif, APPLICATION_EXT_FUNC_CODE) == GIF_ERROR ||
        EGifPutExtensionBlock(gif, 11, "NETSCAPE2.0") == GIF_ERROR ||
        EGifPutExtensionBlock(gif, sizeof(kLoop), kLoop) == GIF_ERROR ||
        EGifPutExtensionTrailer(gif) == GIF_ERROR) {
      Fail("loop extension", gif->Error);
    }
  } else if (frame.width != width_ || frame.height != height_) {
    throw InvalidArgument("GIF frame of " + std::to_string(frame.width) + "x" +
                          std::to_string(frame.height) + " after frames of " +
                          std::to_string(width_) + "x" + std::to_string(height_) + " for " + path_);
  }

  GraphicsControlBlock control{};
  control.DisposalMode = DISPOSE_DO_NOT;
  control.UserInputFlag = false;
  control.DelayTime = frame_delay_cs_;
  control.TransparentColor = NO_TRANSPARENT_COLOR;
  GifByteType extension[4];
  const std::size_t extension_size = EGifGCBToExtension(&control, extension);
  if (EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, static_cast<int>(extension_size), extension) ==
      GIF_ERROR) {
    Fail("frame delay", gif->Error);
  }

  IndexedFrame indexed = QuantizeFrame(frame);
  // A GIF palette has 2^k entries, at least 2.
  int bits = 1;
  while ((1u << bits) < indexed.palette.size()) ++bits;
  ColorMapObject* palette = GifMakeMapObject(1 << bits, nullptr);
  if (!palette) Fail("palette", E_GIF_ERR_NOT_ENOUGH_MEM);
  for (std::size_t i = 0; i < indexed.palette.size(); ++i) {
    palette->Colors[i] = {indexed.palette[i][0], indexed.palette[i][1], indexed.palette[i][2]};
  }
  const bool described =
      EGifPutImageDesc(gif, 0, 0, width_, height_, /*Interlace=*/false, palette) != GIF_ERROR;
  GifFreeMapObject(palette);  // EGifPutImageDesc keeps a copy
  if (!described) Fail("image descriptor", gif->Error);
  for (int y = 0; y < height_; ++y) {
    if (EGifPutLine(gif, indexed.indices.data() + static_cast<std::size_t>(y) * width_, width_) ==
        GIF_ERROR) {
      Fail("pixels", gif->Error);
    }
  }
  ++frames_;
}

void GifWriter::Close() {
  if (!gif_) throw FailedPrecondition("GIF " + path_ + " is closed");
  if (frames_ == 0) throw FailedPrecondition("GIF " + path_ + " has no frames");
  int error = 0;
  const bool closed = EGifCloseFile(AsGif(gif_), &error) != GIF_ERROR;
  gif_ = nullptr;
  if (!closed) {
    std::remove(tmp_path_.c_str());
    throw Unavailable("cannot write " + path_ + ": " + GifError(error));
  }
  std::error_code renamed;
  std::filesystem::rename(tmp_path_, path_, renamed);
  if (renamed) {
    std::remove(tmp_path_.c_str());
    throw Unavailable("cannot write " + path_ + ": " + renamed.message());
  }
}

}  // namespace rlswarm::observe
