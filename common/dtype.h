#pragma once

// Element types of the arrays that cross rlswarm's boundaries (observations,
// actions, replay fields, rpc payloads). Names follow NumPy/LibTorch so specs
// read the same in every tool.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rlswarm {

enum class DType : std::uint8_t {
  kBool,  // one byte, 0 or 1 (as NumPy's and LibTorch's bool)
  kUInt8,
  kInt32,
  kInt64,
  kFloat32,
  kFloat64,
};

// Bytes per element.
std::size_t DTypeSize(DType dtype);
// "bool", "uint8", "int32", "int64", "float32", "float64".
std::string_view DTypeName(DType dtype);
// Inverse of DTypeName; throws InvalidArgument naming the accepted names.
DType ParseDType(std::string_view name);

}  // namespace rlswarm
