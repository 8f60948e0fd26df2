#include "common/payload.h"

#include <cstring>

#include "common/errors.h"

namespace rlswarm {

Payload Payload::Copy(DType dtype, std::vector<std::int64_t> shape, const void* data,
                      std::size_t bytes) {
  auto buffer = std::shared_ptr<std::byte[]>(new std::byte[bytes > 0 ? bytes : 1]);
  if (bytes > 0) std::memcpy(buffer.get(), data, bytes);
  const void* raw = buffer.get();
  return Adopt(dtype, std::move(shape), std::shared_ptr<const void>(buffer, raw), raw, bytes);
}

Payload Payload::Adopt(DType dtype, std::vector<std::int64_t> shape,
                       std::shared_ptr<const void> owner, const void* data, std::size_t bytes) {
  Payload p;
  p.dtype_ = dtype;
  p.shape_ = std::move(shape);
  const std::int64_t numel = p.NumElements();
  std::size_t expected = 0;
  if (numel < 0 ||
      __builtin_mul_overflow(static_cast<std::size_t>(numel), DTypeSize(dtype), &expected) ||
      expected != bytes) {
    throw InvalidArgument("payload of " + std::to_string(bytes) + " bytes does not match its " +
                          std::string(DTypeName(dtype)) + " shape of " + std::to_string(numel) +
                          " elements");
  }
  p.owner_ = std::move(owner);
  p.data_ = static_cast<const std::byte*>(data);
  p.size_ = bytes;
  return p;
}

Payload Payload::FromString(std::string text) {
  const auto n = static_cast<std::int64_t>(text.size());
  std::vector<char> chars(text.begin(), text.end());
  return FromVector(DType::kUInt8, {n}, std::move(chars));
}

std::int64_t Payload::NumElements() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape_) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;  // -1: no valid count
  }
  return n;
}

void Payload::CheckElementType(std::size_t size, bool floating) const {
  const bool dtype_floating = dtype_ == DType::kFloat32 || dtype_ == DType::kFloat64;
  if (DTypeSize(dtype_) != size || dtype_floating != floating) {
    throw InvalidArgument("payload holds " + std::string(DTypeName(dtype_)) +
                          ", read as a different element type");
  }
}

}  // namespace rlswarm
