#pragma once

// Writes an envs::Image as a PNG file (libpng), atomically: to a temporary
// file first, renamed into place, so a reader never sees half an image.

#include <string>

#include "envs/render.h"

namespace rlswarm::observe {

// Throws Unavailable (or ResourceExhausted on a full disk) naming the path.
void WritePng(const std::string& path, const envs::Image& image);

}  // namespace rlswarm::observe
