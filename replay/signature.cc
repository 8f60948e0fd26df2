#include "replay/signature.h"

#include <algorithm>
#include <string>

#include "common/errors.h"

namespace rlswarm::replay {

std::int64_t FieldSpec::NumElements() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

void Signature::Validate() const {
  if (fields.empty()) throw InvalidArgument("signature: no fields");
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const FieldSpec& f = fields[i];
    if (f.name.empty())
      throw InvalidArgument("signature: field " + std::to_string(i) + " has no name");
    for (std::size_t j = 0; j < i; ++j) {
      if (fields[j].name == f.name) {
        throw InvalidArgument("signature: field '" + f.name + "' declared twice");
      }
    }
    for (std::int64_t d : f.shape) {
      if (d < 1) {
        throw InvalidArgument("signature: field '" + f.name + "' has shape " +
                              ShapeToString(f.shape) + "; every dimension must be >= 1");
      }
    }
  }
}

int Signature::IndexOf(std::string_view name) const {
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::size_t Signature::ItemBytes() const {
  std::size_t bytes = 0;
  for (const FieldSpec& f : fields) bytes += f.ItemBytes();
  return bytes;
}

std::string ShapeToString(std::span<const std::int64_t> shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::int64_t ValidateBatch(const Signature& signature, std::span<const FieldView> batch,
                           std::vector<const std::byte*>& ordered) {
  const std::size_t num_fields = signature.fields.size();
  ordered.assign(num_fields, nullptr);
  std::int64_t count = -1;
  std::string_view count_field;  // names are built only for messages: this runs per batch
  for (const FieldView& view : batch) {
    const std::string_view name = view.name;
    const int index = signature.IndexOf(view.name);
    if (index < 0)
      throw InvalidArgument("field '" + std::string(name) + "' is not in the table signature");
    if (ordered[index] != nullptr)
      throw InvalidArgument("field '" + std::string(name) + "' given twice");
    const FieldSpec& spec = signature.fields[index];
    if (view.dtype != spec.dtype) {
      throw InvalidArgument("field '" + std::string(name) + "' has dtype " +
                            std::string(DTypeName(view.dtype)) + ", expected " +
                            std::string(DTypeName(spec.dtype)));
    }
    const auto item_shape = view.shape.empty() ? view.shape : view.shape.subspan(1);
    if (view.shape.empty() ||
        !std::equal(item_shape.begin(), item_shape.end(), spec.shape.begin(), spec.shape.end())) {
      throw InvalidArgument("field '" + std::string(name) + "' has shape " +
                            ShapeToString(view.shape) + ", expected [N] + " +
                            ShapeToString(spec.shape));
    }
    const std::int64_t n = view.shape[0];
    if (n < 1)
      throw InvalidArgument("field '" + std::string(name) +
                            "' holds no items (N = " + std::to_string(n) + ")");
    if (count >= 0 && n != count) {
      throw InvalidArgument("field '" + std::string(name) + "' holds " + std::to_string(n) +
                            " items but '" + std::string(count_field) + "' holds " +
                            std::to_string(count));
    }
    count = n;
    count_field = name;
    const std::size_t expected = static_cast<std::size_t>(n) * spec.ItemBytes();
    if (view.data.size() != expected) {
      throw InvalidArgument(
          "field '" + std::string(name) + "' has " + std::to_string(view.data.size()) +
          " bytes, shape " + ShapeToString(view.shape) + " of " +
          std::string(DTypeName(spec.dtype)) + " needs " + std::to_string(expected));
    }
    // Items have at least one byte (dimensions >= 1), so data() is not null
    // and null still means "missing" below.
    ordered[index] = view.data.data();
  }
  for (std::size_t i = 0; i < num_fields; ++i) {
    if (ordered[i] == nullptr) {
      throw InvalidArgument("field '" + signature.fields[i].name + "' is missing");
    }
  }
  return count;
}

}  // namespace rlswarm::replay
