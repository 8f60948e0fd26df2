#pragma once

// Payload: one array (dtype, shape, bytes) carried in its own ZeroMQ frame.
//
// A Payload never copies unless asked to: Adopt/FromVector hand an existing
// buffer to ZeroMQ (kept alive by a shared owner until the last frame that
// references it is sent), and a received Payload is a view into the received
// ZeroMQ message (the owner keeps that message alive). Copying a Payload
// copies the handle, not the bytes. Immutable, so safe to share across threads.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "common/dtype.h"

namespace rlswarm {

class Payload {
 public:
  Payload() = default;

  // Copies `bytes` bytes from `data`.
  static Payload Copy(DType dtype, std::vector<std::int64_t> shape, const void* data,
                      std::size_t bytes);
  // Zero-copy: `data` stays valid for as long as `owner` lives.
  static Payload Adopt(DType dtype, std::vector<std::int64_t> shape,
                       std::shared_ptr<const void> owner, const void* data, std::size_t bytes);
  // Zero-copy: takes the vector over.
  template <class T>
  static Payload FromVector(DType dtype, std::vector<std::int64_t> shape, std::vector<T>&& values) {
    auto owner = std::make_shared<const std::vector<T>>(std::move(values));
    const void* data = owner->data();
    const std::size_t bytes = owner->size() * sizeof(T);
    return Adopt(dtype, std::move(shape), std::move(owner), data, bytes);
  }
  // A 1-D uint8 payload holding a string (names, JSON, small blobs).
  static Payload FromString(std::string text);

  DType dtype() const { return dtype_; }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  // -1 if a dimension is negative or the count overflows int64.
  std::int64_t NumElements() const;
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::shared_ptr<const void>& owner() const { return owner_; }

  // The elements as T; throws InvalidArgument if T does not match dtype().
  template <class T>
  std::span<const T> As() const {
    CheckElementType(sizeof(T), IsFloatingPoint<T>());
    return {reinterpret_cast<const T*>(data_), size_ / sizeof(T)};
  }
  std::string ToString() const { return {reinterpret_cast<const char*>(data_), size_}; }

 private:
  template <class T>
  static constexpr bool IsFloatingPoint() {
    return std::is_floating_point_v<T>;
  }
  void CheckElementType(std::size_t size, bool floating) const;

  DType dtype_ = DType::kUInt8;
  std::vector<std::int64_t> shape_;
  std::shared_ptr<const void> owner_;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace rlswarm
