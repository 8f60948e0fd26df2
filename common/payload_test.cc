#include "common/payload.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/errors.h"

namespace rlswarm {
namespace {

TEST(PayloadTest, DefaultIsAnEmptyUInt8Scalar) {
  const Payload p;
  EXPECT_EQ(p.dtype(), DType::kUInt8);
  EXPECT_TRUE(p.shape().empty());
  EXPECT_TRUE(p.bytes().empty());
  EXPECT_EQ(p.owner(), nullptr);
}

TEST(PayloadTest, CopyCopiesTheBytes) {
  std::vector<float> values = {1.5f, -2.0f, 3.25f, 4.0f, 5.0f, 6.0f};
  const Payload p = Payload::Copy(DType::kFloat32, {2, 3}, values.data(), values.size() * 4);
  values.assign(values.size(), 0.0f);  // the payload must not see this
  EXPECT_EQ(p.dtype(), DType::kFloat32);
  EXPECT_EQ(p.shape(), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(p.NumElements(), 6);
  ASSERT_EQ(p.bytes().size(), 24u);
  const auto f = p.As<float>();
  ASSERT_EQ(f.size(), 6u);
  EXPECT_EQ(f[0], 1.5f);
  EXPECT_EQ(f[2], 3.25f);
  EXPECT_EQ(f[5], 6.0f);
  EXPECT_NE(static_cast<const void*>(p.bytes().data()), static_cast<const void*>(values.data()));
}

TEST(PayloadTest, CopyOfNothingIsAValidEmptyPayload) {
  const Payload p = Payload::Copy(DType::kInt64, {0, 5}, nullptr, 0);
  EXPECT_EQ(p.NumElements(), 0);
  EXPECT_TRUE(p.bytes().empty());
  EXPECT_TRUE(p.As<std::int64_t>().empty());
}

TEST(PayloadTest, AScalarHasOneElement) {
  const double x = 2.5;
  const Payload p = Payload::Copy(DType::kFloat64, {}, &x, sizeof(x));
  EXPECT_EQ(p.NumElements(), 1);
  EXPECT_EQ(p.As<double>()[0], 2.5);
}

TEST(PayloadTest, AdoptDoesNotCopy) {
  auto buffer = std::make_shared<std::vector<std::int32_t>>(std::vector<std::int32_t>{1, 2, 3});
  const Payload p = Payload::Adopt(DType::kInt32, {3}, buffer, buffer->data(), 12);
  EXPECT_EQ(static_cast<const void*>(p.bytes().data()), static_cast<const void*>(buffer->data()));
  (*buffer)[1] = 20;  // a view: writes through the owner are visible
  EXPECT_EQ(p.As<std::int32_t>()[1], 20);
}

TEST(PayloadTest, TheOwnerLivesUntilTheLastCopyOfThePayloadDies) {
  bool freed = false;
  auto* raw = new std::uint8_t[4]{1, 2, 3, 4};
  {
    std::shared_ptr<const void> owner(raw, [&freed](const void* p) {
      delete[] static_cast<const std::uint8_t*>(p);
      freed = true;
    });
    Payload first = Payload::Adopt(DType::kUInt8, {4}, std::move(owner), raw, 4);
    ASSERT_EQ(owner, nullptr);
    {
      const Payload second = first;  // copies the handle, not the bytes
      std::vector<Payload> third = {second};
      EXPECT_EQ(second.bytes().data(), first.bytes().data());
      first = Payload();  // drop the original handle
      EXPECT_FALSE(freed);
      EXPECT_EQ(third[0].As<std::uint8_t>()[3], 4);
      Payload moved = std::move(third[0]);
      third.clear();
      EXPECT_FALSE(freed);
      EXPECT_EQ(moved.As<std::uint8_t>()[0], 1);
    }
    EXPECT_TRUE(freed);
  }
}

TEST(PayloadTest, FromVectorTakesTheVectorOverWithoutCopying) {
  std::vector<double> values(1000, 0.5);
  const double* data = values.data();
  const Payload p = Payload::FromVector(DType::kFloat64, {10, 100}, std::move(values));
  EXPECT_EQ(reinterpret_cast<const double*>(p.bytes().data()), data);
  EXPECT_EQ(p.bytes().size(), 8000u);
  EXPECT_EQ(p.As<double>()[999], 0.5);
}

TEST(PayloadTest, FromVectorOfEveryDType) {
  const Payload flags = Payload::FromVector(DType::kBool, {2}, std::vector<std::uint8_t>{1, 0});
  EXPECT_TRUE(flags.As<bool>()[0]);
  EXPECT_FALSE(flags.As<bool>()[1]);
  EXPECT_EQ(Payload::FromVector(DType::kUInt8, {3}, std::vector<std::uint8_t>{1, 2, 3})
                .As<std::uint8_t>()[2],
            3);
  EXPECT_EQ(Payload::FromVector(DType::kInt32, {2}, std::vector<std::int32_t>{-1, 7})
                .As<std::int32_t>()[0],
            -1);
  EXPECT_EQ(Payload::FromVector(DType::kInt64, {1}, std::vector<std::int64_t>{1LL << 40})
                .As<std::int64_t>()[0],
            1LL << 40);
  EXPECT_EQ(Payload::FromVector(DType::kFloat32, {1}, std::vector<float>{0.25f}).As<float>()[0],
            0.25f);
  EXPECT_EQ(Payload::FromVector(DType::kFloat64, {1}, std::vector<double>{0.125}).As<double>()[0],
            0.125);
}

TEST(PayloadTest, FromStringIsAOneDimensionalUInt8Payload) {
  const std::string text = std::string("{\"a\": 1}") + '\0' + "tail";
  const Payload p = Payload::FromString(text);
  EXPECT_EQ(p.dtype(), DType::kUInt8);
  EXPECT_EQ(p.shape(), (std::vector<std::int64_t>{static_cast<std::int64_t>(text.size())}));
  EXPECT_EQ(p.ToString(), text);  // embedded NULs survive

  const Payload empty = Payload::FromString("");
  EXPECT_EQ(empty.shape(), (std::vector<std::int64_t>{0}));
  EXPECT_EQ(empty.ToString(), "");
}

TEST(PayloadTest, AsRejectsAWrongElementType) {
  const Payload f32 = Payload::FromVector(DType::kFloat32, {2}, std::vector<float>{1, 2});
  EXPECT_THROW(f32.As<std::int32_t>(), InvalidArgument);  // same size, not floating
  EXPECT_THROW(f32.As<double>(), InvalidArgument);
  EXPECT_THROW(f32.As<std::uint8_t>(), InvalidArgument);
  EXPECT_NO_THROW(f32.As<float>());

  const Payload i64 = Payload::FromVector(DType::kInt64, {1}, std::vector<std::int64_t>{1});
  EXPECT_THROW(i64.As<double>(), InvalidArgument);  // same size, floating
  EXPECT_THROW(i64.As<std::int32_t>(), InvalidArgument);

  const Payload f64 = Payload::FromVector(DType::kFloat64, {1}, std::vector<double>{1});
  EXPECT_THROW(f64.As<std::int64_t>(), InvalidArgument);
  try {
    f64.As<float>();
    FAIL() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("float64"), std::string::npos) << e.what();
  }
}

TEST(PayloadTest, AdoptRejectsASizeThatDoesNotMatchTheShape) {
  auto buffer = std::make_shared<std::vector<float>>(6);
  EXPECT_THROW(Payload::Adopt(DType::kFloat32, {2, 3}, buffer, buffer->data(), 23),
               InvalidArgument);
  EXPECT_THROW(Payload::Adopt(DType::kFloat32, {2, 4}, buffer, buffer->data(), 24),
               InvalidArgument);
  EXPECT_THROW(Payload::Adopt(DType::kFloat64, {2, 3}, buffer, buffer->data(), 24),
               InvalidArgument);
  EXPECT_THROW(Payload::Adopt(DType::kFloat32, {-2, -3}, buffer, buffer->data(), 24),
               InvalidArgument);  // negative dims, even if their product fits
  EXPECT_THROW(Payload::Copy(DType::kUInt8, {4}, buffer->data(), 3), InvalidArgument);
  EXPECT_THROW(Payload::FromVector(DType::kInt64, {2}, std::vector<std::int32_t>{1, 2}),
               InvalidArgument);
  try {
    Payload::Adopt(DType::kInt32, {5}, buffer, buffer->data(), 24);
    FAIL() << "accepted";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("24 bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("int32"), std::string::npos) << what;
  }
  EXPECT_NO_THROW(Payload::Adopt(DType::kFloat32, {2, 3}, buffer, buffer->data(), 24));
}

TEST(PayloadTest, AdoptRejectsAShapeWhoseElementCountOverflows) {
  // 2^32 * 2^32 wraps a 64-bit element count to 0, which would match 0 bytes.
  EXPECT_THROW(Payload::Adopt(DType::kUInt8, {1LL << 32, 1LL << 32}, nullptr, nullptr, 0),
               InvalidArgument);
  // 2^62 float64 elements fit the count but their byte size wraps to 0.
  EXPECT_THROW(Payload::Adopt(DType::kFloat64, {1LL << 62}, nullptr, nullptr, 0), InvalidArgument);
}

}  // namespace
}  // namespace rlswarm
