#pragma once

// Private parts of Table shared by its .cc files. Not part of the API.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "replay/table.h"

namespace rlswarm::replay {

// A validated insert: the field data in signature order and the keys it
// will get (allocated before taking the lock).
struct Table::PreparedInsert {
  std::vector<const std::byte*> fields;
  std::int64_t n = 0;
  std::span<const double> priorities;
  std::int64_t policy_version = 0;
  std::vector<std::uint64_t> keys;
  // The hash of every frame of the frame-stacked fields, item by item, in
  // field order: [n, frames_per_item] (hashed before taking the lock).
  std::vector<std::uint64_t> frame_hashes;
};

struct Table::InsertWaiter {
  WaiterId id;
  Deadline deadline;
  PreparedInsert insert;
  InsertCallback done;
};

struct Table::SampleWaiter {
  WaiterId id;
  Deadline deadline;
  SampleRequest request;
  SampledBatch batch;  // allocated before taking the lock
  SampleCallback done;
};

}  // namespace rlswarm::replay
