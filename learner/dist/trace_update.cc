#include "learner/dist/trace_update.h"

#include <ATen/ATen.h>

#include <cstdio>
#include <cstring>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "learner/dist/trace_recorder.h"

namespace rlswarm::learner {

std::string TraceOneUpdate(Communicator& comm, const std::function<bool()>& update) {
  at::Tensor barrier = at::zeros({1}, at::kDouble);
  comm.ControlAllReduceSum(barrier, "trace barrier");
  TraceRecorder& recorder = TraceRecorder::Global();
  const int64_t origin = TraceRecorder::NowNs();
  bool ran = false;
  while (!ran) {
    recorder.Start(comm.rank(), origin);  // drops an attempt that did not run
    TraceSpan span;
    span.Begin("update");
    ran = update();
    span.End();
    recorder.Stop();
  }
  const std::string mine = recorder.ToChromeJson();
  // Every rank's trace to rank 0 through sums: each rank fills its own
  // slot of a zero buffer.
  const int world = comm.world_size();
  at::Tensor lengths = at::zeros({world}, at::kDouble);
  lengths[comm.rank()] = static_cast<double>(mine.size());
  comm.ControlAllReduceSum(lengths, "trace sizes");
  std::vector<int64_t> sizes(world);
  int64_t total = 0, offset = 0;
  for (int r = 0; r < world; ++r) {
    sizes[r] = static_cast<int64_t>(lengths[r].item<double>());
    if (r < comm.rank()) offset += sizes[r];
    total += sizes[r];
  }
  at::Tensor bytes = at::zeros({total}, at::kByte);
  std::memcpy(bytes.data_ptr<uint8_t>() + offset, mine.data(), mine.size());
  comm.ControlAllReduceSum(bytes, "trace gather");
  if (comm.rank() != 0) return "";
  std::vector<std::string> parts;
  const char* data = reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>());
  for (int r = 0, at = 0; r < world; at += static_cast<int>(sizes[r]), ++r) {
    parts.emplace_back(data + at, static_cast<size_t>(sizes[r]));
  }
  return MergeChromeTraces(parts);
}

void WriteTraceFile(const std::string& path, const std::string& trace) {
  WriteFileAtomically(path, trace);
}

}  // namespace rlswarm::learner
