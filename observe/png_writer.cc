#include "observe/png_writer.h"

#include <png.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "common/errors.h"

namespace rlswarm::observe {

void WritePng(const std::string& path, const envs::Image& image) {
  const std::string tmp = path + ".tmp";
  FILE* file = std::fopen(tmp.c_str(), "wb");
  if (!file) throw Unavailable("cannot write " + tmp + ": " + std::strerror(errno));
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    std::fclose(file);
    std::remove(tmp.c_str());
    throw Unavailable("libpng failed writing " + path);
  }
  png_init_io(png, file);
  png_set_IHDR(png, info, static_cast<png_uint_32>(image.width),
               static_cast<png_uint_32>(image.height), 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < image.height; ++y) {
    png_write_row(png, image.rgb.data() + static_cast<std::size_t>(y) * image.width * 3);
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  const bool flushed = std::fflush(file) == 0;
  const int flush_errno = errno;
  std::fclose(file);
  if (!flushed) {
    std::remove(tmp.c_str());
    const std::string message = "cannot write " + path + ": " + std::strerror(flush_errno);
    if (flush_errno == ENOSPC) throw ResourceExhausted(message);
    throw Unavailable(message);
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace rlswarm::observe
