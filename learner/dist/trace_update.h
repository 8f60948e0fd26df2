#pragma once

// Traces one learner update on every rank into one Chrome trace
// (trace_recorder.h): what `rlswarm learner --trace` and `learner_bench
// --trace` call, and the test.

#include <functional>
#include <string>

#include "learner/dist/communicator.h"

namespace rlswarm::learner {

// Collective (control plane): every rank must call it at the same point of
// its update sequence. One all-reduce as a barrier, so that the ranks'
// traces start together; then `update` inside an "update" span, recorded
// into TraceRecorder::Global(); then two all-reduces that bring every
// rank's trace to rank 0. `update` returns false when it did not run (no
// replay batch yet: nothing collective happened) and is then called again,
// the recorder keeping only the attempt that ran. Returns the merged trace
// (ranks as pids, one time line) on rank 0 and "" on the others. Throws what
// the collectives throw (DeadlineExceeded, Unavailable).
std::string TraceOneUpdate(Communicator& comm, const std::function<bool()>& update);

// Writes `trace` to `path` atomically (temporary file, then rename).
// Throws Unavailable when it cannot.
void WriteTraceFile(const std::string& path, const std::string& trace);

}  // namespace rlswarm::learner
