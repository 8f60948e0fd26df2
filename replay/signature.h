#pragma once

// Signature: the named fields every item of a table has (observation,
// action, reward, discount, next_observation, ...), each a dense array of a
// fixed dtype and shape. Validated once at table construction; every insert
// is checked against it before anything is stored.
//
// Replay moves bytes with a dtype and shape and does not depend on envs or
// rpc: the service turns rpc payloads into FieldViews.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/dtype.h"

namespace rlswarm::replay {

// One field of an item: e.g. {"observation", kFloat32, {4}}. A scalar has an
// empty shape.
struct FieldSpec {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<std::int64_t> shape;

  std::int64_t NumElements() const;
  std::size_t ItemBytes() const {
    return static_cast<std::size_t>(NumElements()) * DTypeSize(dtype);
  }
  bool operator==(const FieldSpec&) const = default;
};

struct Signature {
  std::vector<FieldSpec> fields;

  // Throws InvalidArgument on no fields, an empty or duplicate name, or a
  // dimension < 1; the message names the field.
  void Validate() const;
  // Index of the field called `name`, or -1.
  int IndexOf(std::string_view name) const;
  // Bytes of one item over all fields.
  std::size_t ItemBytes() const;
  bool operator==(const Signature&) const = default;
};

// A batch of one field as handed in by a caller: shape is [N, field shape...]
// and data holds N items, row-major. Views only: the caller owns the bytes.
struct FieldView {
  std::string_view name;
  DType dtype = DType::kFloat32;
  std::span<const std::int64_t> shape;
  std::span<const std::byte> data;
};

// "[4, 3]"
std::string ShapeToString(std::span<const std::int64_t> shape);

// Checks a batch against `signature`: every field present exactly once, no
// unknown field, dtype and item shape as declared, the same item count N >= 1
// for every field, and data of exactly N * item bytes. Returns N and fills
// `ordered` with each field's data pointer in signature order. Throws
// InvalidArgument naming the field and what is wrong; checks everything
// before the caller stores anything.
std::int64_t ValidateBatch(const Signature& signature, std::span<const FieldView> batch,
                           std::vector<const std::byte*>& ordered);

}  // namespace rlswarm::replay
