#include "models/dtype_translation.h"

#include <string>
#include <utility>

#include "common/errors.h"

namespace rlswarm::models {
namespace {

constexpr std::pair<DType, at::ScalarType> kTranslation[] = {
    {DType::kBool, at::kBool},  {DType::kUInt8, at::kByte},    {DType::kInt32, at::kInt},
    {DType::kInt64, at::kLong}, {DType::kFloat32, at::kFloat}, {DType::kFloat64, at::kDouble},
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

}  // namespace rlswarm::models
