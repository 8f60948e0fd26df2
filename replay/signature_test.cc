#include "replay/signature.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "replay/test_util.h"

namespace rlswarm::replay {
namespace {

using testing::TestBatch;
using testing::TestSignature;

std::string ValidationError(const InsertBatch& batch) {
  std::vector<const std::byte*> ordered;
  try {
    ValidateBatch(TestSignature(), batch.fields, ordered);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(SignatureTest, ValidateRejectsEmptyDuplicateAndBadShapes) {
  EXPECT_THROW(Signature{}.Validate(), InvalidArgument);
  Signature duplicate{{{"x", DType::kFloat32, {}}, {"x", DType::kInt64, {}}}};
  EXPECT_THROW(duplicate.Validate(), InvalidArgument);
  Signature zero_dim{{{"x", DType::kFloat32, {3, 0}}}};
  EXPECT_THROW(zero_dim.Validate(), InvalidArgument);
  EXPECT_NO_THROW(TestSignature().Validate());
  EXPECT_EQ(TestSignature().ItemBytes(), 16u + 8u + 4u);
}

TEST(SignatureTest, ValidBatchReturnsCountAndSignatureOrder) {
  TestBatch data(3);
  InsertBatch batch = data.Get();
  std::swap(batch.fields[0], batch.fields[2]);  // any order is fine
  std::vector<const std::byte*> ordered;
  EXPECT_EQ(ValidateBatch(TestSignature(), batch.fields, ordered), 3);
  EXPECT_EQ(ordered[0], batch.fields[2].data.data());
  EXPECT_EQ(ordered[2], batch.fields[0].data.data());
}

TEST(SignatureTest, MessagesNameTheFieldAndTheProblem) {
  TestBatch data(2);
  TestBatch other(3);

  InsertBatch unknown = data.Get();
  unknown.fields[1].name = "actions";
  EXPECT_NE(ValidationError(unknown).find("'actions' is not in the table signature"),
            std::string::npos);

  InsertBatch missing = data.Get();
  missing.fields.pop_back();
  EXPECT_NE(ValidationError(missing).find("'reward' is missing"), std::string::npos);

  InsertBatch twice = data.Get();
  twice.fields.push_back(twice.fields[0]);
  EXPECT_NE(ValidationError(twice).find("'observation' given twice"), std::string::npos);

  InsertBatch dtype = data.Get();
  dtype.fields[1].dtype = DType::kInt32;
  EXPECT_NE(ValidationError(dtype).find("'action' has dtype int32, expected int64"),
            std::string::npos);

  const std::vector<std::int64_t> wrong_shape = {2, 5};
  InsertBatch shape = data.Get();
  shape.fields[0].shape = wrong_shape;
  EXPECT_NE(ValidationError(shape).find("'observation' has shape [2, 5], expected [N] + [4]"),
            std::string::npos);

  InsertBatch count = data.Get();
  count.fields[2] = other.Get().fields[2];
  EXPECT_NE(ValidationError(count).find("'reward' holds 3 items but 'action' holds 2"),
            std::string::npos);

  InsertBatch bytes = data.Get();
  bytes.fields[2].data = bytes.fields[2].data.first(7);
  EXPECT_NE(ValidationError(bytes).find("'reward' has 7 bytes"), std::string::npos);
}

}  // namespace
}  // namespace rlswarm::replay
