#pragma once

// An animated GIF (giflib) written frame by frame, so that an episode of
// hundreds of 600x400 frames never sits in memory whole. Each frame gets
// its own palette: the frame's exact colours when there are at most 256
// (the env renderings have a handful), else a fixed 6x7x6 colour cube. The
// animation loops (NETSCAPE2.0 extension).
//
// Written to PATH.tmp and renamed into place by Close(), so a reader never
// sees half an animation.
//
// Thread-safety: none; one thread owns a GifWriter.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "envs/render.h"

namespace rlswarm::observe {

// A frame's colours as palette indices.
struct IndexedFrame {
  std::vector<std::array<std::uint8_t, 3>> palette;  // at most 256 entries
  std::vector<std::uint8_t> indices;                 // one per pixel, row-major
};
// Exact when the frame has at most 256 colours; else each channel rounded to
// the 6x7x6 cube (green, which the eye resolves best, gets the 7 levels).
IndexedFrame QuantizeFrame(const envs::Image& frame);

class GifWriter {
 public:
  // Opens PATH.tmp. frame_delay_cs: how long each frame shows, in
  // hundredths of a second (GIF's unit), in [1, 65535]. Throws
  // InvalidArgument (bad delay) or Unavailable naming the path.
  GifWriter(std::string path, int frame_delay_cs);
  // Removes PATH.tmp when Close() was not reached.
  ~GifWriter();
  GifWriter(const GifWriter&) = delete;
  GifWriter& operator=(const GifWriter&) = delete;

  // The first frame sets the animation's size; a later frame of another
  // size, or an empty one, throws InvalidArgument. Throws Unavailable naming
  // the path when giflib fails to write.
  void AddFrame(const envs::Image& frame);
  // Finishes the file and renames it to PATH. Throws FailedPrecondition
  // with no frames, Unavailable naming the path when writing fails.
  void Close();

  int frames() const { return frames_; }
  const std::string& path() const { return path_; }

 private:
  // Closes and removes PATH.tmp, then throws Unavailable naming the path.
  [[noreturn]] void Fail(const std::string& what, int error);

  std::string path_;
  std::string tmp_path_;
  int frame_delay_cs_;
  void* gif_ = nullptr;  // GifFileType*, kept out of this header
  int width_ = 0;
  int height_ = 0;
  int frames_ = 0;
};

}  // namespace rlswarm::observe
