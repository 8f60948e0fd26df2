#include "models/dtype_translation.h"

#include <string>
#include <string_view>
#include <utility>

#include "common/errors.h"

namespace rlswarm::models {
namespace {

constexpr std::pair<DType, at::ScalarType> kTranslation[] = {
    {DType::kBool, at::kBool},  {DType::kUInt8, at::kByte},    {DType::kInt32, at::kInt},
    {DType::kInt64, at::kLong}, {DType::kFloat32, at::kFloat}, {DType::kFloat64, at::kDouble},
};

constexpr std::pair<std::string_view, at::ScalarType> kFloatTypes[] = {
    {"float32", at::kFloat},
    {"float64", at::kDouble},
    {"bfloat16", at::kBFloat16},
    {"float16", at::kHalf},
};

}  // namespace

at::ScalarType ToScalarType(DType dtype) {
  for (const auto& [ours, theirs] : kTranslation) {
    if (ours == dtype) return theirs;
  }
  throw InvalidArgument("unknown DType " + std::to_string(static_cast<int>(dtype)));
}

DType ToDType(at::ScalarType type) {
  for (const auto& [ours, theirs] : kTranslation) {
    if (theirs == type) return ours;
  }
  throw InvalidArgument(std::string("no rlswarm DType for ") + c10::toString(type));
}

std::string_view FloatTypeName(at::ScalarType type) {
  for (const auto& [name, t] : kFloatTypes) {
    if (t == type) return name;
  }
  throw InvalidArgument(std::string("not a parameter dtype: ") + c10::toString(type));
}

at::ScalarType ParseFloatType(std::string_view name) {
  for (const auto& [n, t] : kFloatTypes) {
    if (n == name) return t;
  }
  throw InvalidArgument("unknown dtype '" + std::string(name) +
                        "' (float32, float64, bfloat16 or float16)");
}

}  // namespace rlswarm::models
