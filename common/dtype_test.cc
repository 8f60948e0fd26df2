#include "common/dtype.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "common/logging.h"

namespace rlswarm {
namespace {

TEST(DTypeTest, NamesRoundTripAndSizesMatchTheCTypes) {
  for (DType d : {DType::kBool, DType::kUInt8, DType::kInt32, DType::kInt64, DType::kFloat32,
                  DType::kFloat64}) {
    EXPECT_EQ(ParseDType(DTypeName(d)), d);
  }
  EXPECT_EQ(DTypeSize(DType::kBool), sizeof(bool));
  EXPECT_EQ(DTypeSize(DType::kInt64), sizeof(std::int64_t));
  EXPECT_EQ(DTypeSize(DType::kFloat32), sizeof(float));
}

TEST(DTypeTest, UnknownNameListsTheKnownOnes) {
  try {
    ParseDType("float16");
    FAIL() << "no exception";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("float32"), std::string::npos);
  }
}

TEST(ErrorsTest, ThrowErrorThrowsTheTypeOfTheCode) {
  EXPECT_THROW(ThrowError(StatusCode::kDeadlineExceeded, "late"), DeadlineExceeded);
  EXPECT_THROW(ThrowError(StatusCode::kDataLoss, "bad"), DataLoss);
  try {
    ThrowError(StatusCode::kUnavailable, "gone");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnavailable);
    EXPECT_STREQ(e.what(), "gone");
    EXPECT_EQ(StatusCodeName(e.code()), "UNAVAILABLE");
  }
}

TEST(LoggingTest, ParsesEveryLevelAndRejectsOthers) {
  EXPECT_EQ(ParseLogLevel("debug"), spdlog::level::debug);
  EXPECT_EQ(ParseLogLevel("off"), spdlog::level::off);
  EXPECT_THROW(ParseLogLevel("verbose"), InvalidArgument);
}

}  // namespace
}  // namespace rlswarm
