#include "common/dtype.h"

#include <string>

#include "common/errors.h"

namespace rlswarm {
namespace {
constexpr DType kAll[] = {DType::kBool,  DType::kUInt8,   DType::kInt32,
                          DType::kInt64, DType::kFloat32, DType::kFloat64};
}  // namespace

std::size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kBool:
    case DType::kUInt8:
      return 1;
    case DType::kInt32:
    case DType::kFloat32:
      return 4;
    case DType::kInt64:
    case DType::kFloat64:
      return 8;
  }
  return 0;
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return "bool";
    case DType::kUInt8:
      return "uint8";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
  }
  return "unknown";
}

DType ParseDType(std::string_view name) {
  std::string known;
  for (DType d : kAll) {
    if (DTypeName(d) == name) return d;
    known += (known.empty() ? "" : ", ") + std::string(DTypeName(d));
  }
  throw InvalidArgument("unknown dtype '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace rlswarm
