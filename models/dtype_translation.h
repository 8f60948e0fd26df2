#pragma once

// The one translation between rlswarm's DType (the bytes that cross process
// boundaries: replay fields, rpc payloads) and LibTorch's at::ScalarType.
// models/ is the lowest library that knows LibTorch, so it lives here.

#include <c10/core/ScalarType.h>

#include "common/dtype.h"

namespace rlswarm::models {

// Every DType has a ScalarType (bool, uint8, int32, int64, float32, float64).
at::ScalarType ToScalarType(DType dtype);
// The inverse; throws InvalidArgument naming the type for a ScalarType with
// no DType (bfloat16, half, complex, ...).
DType ToDType(at::ScalarType type);

// The names of the floating-point types parameters are kept and computed
// in, as configs and checkpoint manifests write them: "float32",
// "float64", "bfloat16", "float16". FloatTypeName throws InvalidArgument
// for any other type, ParseFloatType for any other name.
std::string_view FloatTypeName(at::ScalarType type);
at::ScalarType ParseFloatType(std::string_view name);

}  // namespace rlswarm::models
