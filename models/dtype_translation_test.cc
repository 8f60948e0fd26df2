#include "models/dtype_translation.h"

#include <gtest/gtest.h>

#include "common/errors.h"

namespace rlswarm::models {
namespace {

TEST(DTypeTranslationTest, EveryDTypeRoundTripsWithTheSameElementSize) {
  for (DType d : {DType::kBool, DType::kUInt8, DType::kInt32, DType::kInt64, DType::kFloat32,
                  DType::kFloat64}) {
    const at::ScalarType t = ToScalarType(d);
    EXPECT_EQ(ToDType(t), d) << DTypeName(d);
    EXPECT_EQ(c10::elementSize(t), DTypeSize(d)) << DTypeName(d);
  }
  EXPECT_EQ(ToScalarType(DType::kFloat32), at::kFloat);
  EXPECT_EQ(ToScalarType(DType::kBool), at::kBool);
}

TEST(DTypeTranslationTest, ScalarTypesWithoutADTypeAreRejectedByName) {
  try {
    ToDType(at::kBFloat16);
    FAIL() << "bfloat16 has no DType";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("BFloat16"), std::string::npos) << e.what();
  }
}

TEST(DTypeTranslationTest, FloatTypeNamesRoundTripAndOthersAreRejected) {
  for (at::ScalarType t : {at::kFloat, at::kDouble, at::kBFloat16, at::kHalf}) {
    EXPECT_EQ(ParseFloatType(FloatTypeName(t)), t);
  }
  EXPECT_EQ(FloatTypeName(at::kBFloat16), "bfloat16");
  EXPECT_THROW(FloatTypeName(at::kLong), InvalidArgument);
  EXPECT_THROW(ParseFloatType("float8"), InvalidArgument);
}

}  // namespace
}  // namespace rlswarm::models
