// The Chrome trace of an update (trace_recorder.h, trace_update.h): off it
// records nothing; overlapping collectives get lanes of their own; the
// ranks' traces merge; and a real 2-rank Gloo update gives JSON that
// Python's json module parses, with forward/backward spans and all-gather /
// reduce-scatter spans inside the update's span on both ranks.

#include "learner/dist/trace_recorder.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "common/testing/child_process.h"
#include "learner/dist/torch_adapter.h"
#include "tests/learner/scenarios.h"

namespace rlswarm::learner {
namespace {

namespace th = ::rlswarm::learner::testing;
using nlohmann::json;

// Hooks, span names and NVTX ranges cost something on every update: none
// of them unless a trace is recording or NVTX ranges were asked for, in a
// CUDA build as in a CPU one.
TEST(TraceRecorderTest, InactiveUnlessRecordingOrAskedForNvtxRanges) {
  TraceRecorder::Global().Stop();
  EXPECT_FALSE(TraceRecorder::NvtxRanges());  // off until asked for
  EXPECT_FALSE(TraceRecorder::Active());
  TraceRecorder::SetNvtxRanges(false);
  EXPECT_FALSE(TraceRecorder::Active());
  TraceSpan span;
  span.Begin("all-gather", "collective", "all-gather");
  EXPECT_FALSE(span.active());

  TraceRecorder::SetNvtxRanges(true);
  // NVTX exists in CUDA builds only; elsewhere asking for it changes nothing.
  EXPECT_EQ(TraceRecorder::Active(), BuiltWithCuda());
  EXPECT_EQ(TraceRecorder::NvtxRanges(), BuiltWithCuda());
  TraceRecorder::SetNvtxRanges(false);

  TraceRecorder::Global().Start(0);
  EXPECT_TRUE(TraceRecorder::Active());
  TraceRecorder::Global().Stop();
  EXPECT_FALSE(TraceRecorder::Active());
}

TEST(TraceRecorderTest, RecordsNothingWhenNotStarted) {
  TraceRecorder& recorder = TraceRecorder::Global();
  recorder.Start(0);
  recorder.Stop();
  ASSERT_FALSE(TraceRecorder::Enabled());
  { TraceScope scope("forward ", "fc0"); }
  recorder.Record({"x", "compute", "compute", 1, 2, {}});
  TraceSpan span;
  span.Begin("all-gather", "collective", "all-gather");
  span.End();
  EXPECT_TRUE(recorder.Events().empty());
  const json trace = json::parse(recorder.ToChromeJson());
  for (const json& e : trace["traceEvents"]) EXPECT_EQ(e["ph"], "M");  // names only
}

TEST(TraceRecorderTest, OverlappingCollectivesOfOneKindGetTheirOwnTracks) {
  TraceRecorder& recorder = TraceRecorder::Global();
  recorder.Start(3, 1000);
  recorder.Record({"forward fc0", "compute", "compute", 1000, 9000, {}});
  recorder.Record(
      {"all-gather of unit 'fc0'", "collective", "all-gather", 2000, 5000, {{"bytes", 64}}});
  recorder.Record({"all-gather of unit 'fc1'", "collective", "all-gather", 3000, 6000, {}});
  recorder.Record({"all-gather of unit 'head'", "collective", "all-gather", 7000, 8000, {}});
  recorder.Record({"reduce-scatter of unit 'fc0'", "collective", "reduce-scatter", 3000, 4000, {}});
  recorder.Stop();
  const json trace = json::parse(recorder.ToChromeJson());
  std::map<std::string, json> by_name;
  std::map<int, std::string> track_names;
  for (const json& e : trace["traceEvents"]) {
    EXPECT_EQ(e["pid"], 3);
    if (e["ph"] == "X") by_name[e["name"].get<std::string>()] = e;
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      track_names[e["tid"].get<int>()] = e["args"]["name"].get<std::string>();
    }
  }
  ASSERT_EQ(by_name.size(), 5u);
  EXPECT_EQ(by_name["forward fc0"]["tid"], 0);
  EXPECT_DOUBLE_EQ(by_name["forward fc0"]["ts"].get<double>(), 0.0);  // us since the origin
  EXPECT_DOUBLE_EQ(by_name["forward fc0"]["dur"].get<double>(), 8.0);
  const int fc0 = by_name["all-gather of unit 'fc0'"]["tid"].get<int>();
  const int fc1 = by_name["all-gather of unit 'fc1'"]["tid"].get<int>();
  EXPECT_NE(fc0, 0);
  EXPECT_NE(fc0, fc1);                                          // in flight together
  EXPECT_EQ(by_name["all-gather of unit 'head'"]["tid"], fc0);  // lane 0 free again
  EXPECT_NE(by_name["reduce-scatter of unit 'fc0'"]["tid"], fc0);
  EXPECT_NE(by_name["reduce-scatter of unit 'fc0'"]["tid"], fc1);
  EXPECT_EQ(by_name["all-gather of unit 'fc0'"]["args"]["bytes"], 64);
  EXPECT_EQ(by_name["all-gather of unit 'fc0'"]["cat"], "collective");
  EXPECT_EQ(track_names[0], "compute");
  EXPECT_EQ(track_names[fc0], "all-gather 0");
  EXPECT_EQ(track_names[fc1], "all-gather 1");

  const json merged =
      json::parse(MergeChromeTraces({recorder.ToChromeJson(), recorder.ToChromeJson()}));
  EXPECT_EQ(merged["traceEvents"].size(), 2 * trace["traceEvents"].size());
  EXPECT_THROW(MergeChromeTraces({"{\"no\": 1}"}), InvalidArgument);
  EXPECT_THROW(MergeChromeTraces({"not json"}), InvalidArgument);
}

std::string MakeTempDir() {
  char tmpl[] = "/tmp/trace_test_XXXXXX";
  const char* dir = mkdtemp(tmpl);
  return dir == nullptr ? "/tmp" : dir;
}

// Python's json module must read the file as a trace: a dict whose
// traceEvents are objects with the fields Perfetto needs.
constexpr char kPythonCheck[] = R"(
import json, sys
t = json.load(open(sys.argv[1]))
events = t["traceEvents"]
assert isinstance(events, list) and events
for e in events:
    assert e["ph"] in ("X", "M"), e
    if e["ph"] == "X":
        for k in ("name", "cat", "ts", "dur", "pid", "tid", "args"):
            assert k in e, (k, e)
        assert e["dur"] >= 0
print(len(events))
)";

TEST(TraceTest, TwoRankUpdateGivesJsonWithUnitAndCollectiveSpansInsideTheUpdate) {
  const std::string dir = MakeTempDir();
  for (const th::WorkerExit& e : th::RunWorkers("trace", 2, dir, std::chrono::seconds(60))) {
    ASSERT_EQ(e.exit_code, 0) << th::ReadText(dir + "/rank0.err")
                              << th::ReadText(dir + "/rank1.err");
  }
  const size_t units = 3;  // the MLP: fc0, fc1, the dueling head
  for (const std::string name : {"full_shard", "shard_grad_op", "full_shard_checkpointed"}) {
    SCOPED_TRACE(name);
    const std::string path = dir + "/trace_" + name + ".json";
    const json trace = json::parse(th::ReadText(path));
    for (int pid = 0; pid < 2; ++pid) {
      SCOPED_TRACE(pid);
      std::vector<json> spans;
      json update;
      for (const json& e : trace["traceEvents"]) {
        if (e["ph"] != "X" || e["pid"] != pid) continue;
        if (e["name"] == "update") update = e;
        spans.push_back(e);
      }
      ASSERT_TRUE(update.is_object());
      const double begin = update["ts"].get<double>();
      const double end = begin + update["dur"].get<double>();
      std::map<std::string, size_t> count;
      for (const json& e : spans) {
        const std::string n = e["name"].get<std::string>();
        const std::string kind = n.substr(0, n.find(' '));
        ++count[e["cat"] == "collective"       ? kind
                : n.rfind("forward ", 0) == 0  ? "unit forward"
                : n.rfind("backward ", 0) == 0 ? "unit backward"
                                               : n];
        const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
        EXPECT_GE(ts, begin - 1e-3) << n;
        EXPECT_LE(ts + dur, end + 1e-3) << n;
        if (e["cat"] == "collective") {
          EXPECT_NE(e["tid"], 0) << n;  // off the compute track
          EXPECT_GT(e["args"]["bytes"].get<int64_t>(), 0) << n;
          if (kind != "all-reduce") {
            EXPECT_NE(n.find("of unit '"), std::string::npos) << n;
          }
        } else {
          EXPECT_EQ(e["tid"], 0) << n;
        }
      }
      // The overlap the trace is for: a unit's reduce-scatter is issued
      // before the backward of the unit below it starts, and under
      // full_shard the re-gather of fc0 is prefetched (issued before fc1's
      // backward starts), with and without activation checkpointing.
      std::map<std::string, std::vector<double>> starts;
      for (const json& e : spans)
        starts[e["name"].get<std::string>()].push_back(e["ts"].get<double>());
      auto first = [&](const std::string& n) {
        return starts[n].empty() ? INFINITY : starts[n].front();
      };
      EXPECT_LE(first("reduce-scatter of unit 'head'"), first("backward fc1"));
      EXPECT_LE(first("reduce-scatter of unit 'fc1'"), first("backward fc0"));
      if (name != "shard_grad_op") {
        ASSERT_EQ(starts["all-gather of unit 'fc0'"].size(), 2u);  // forward, re-gather
        EXPECT_LE(starts["all-gather of unit 'fc0'"][1], first("backward fc1"));
      }
      EXPECT_EQ(count["unit forward"], units);
      EXPECT_EQ(count["unit backward"], units);
      EXPECT_EQ(count["backward"], 1u);  // loss.backward(), around the units'
      EXPECT_GE(count["all-gather"], units);
      EXPECT_EQ(count["reduce-scatter"], units);
      EXPECT_EQ(count["all-reduce"], 1u);  // the update's norms
      EXPECT_EQ(count["optimizer step"], 1u);
      EXPECT_EQ(count["loss"], 1u);
    }
    if (access("/usr/bin/python3", X_OK) == 0) {
      rlswarm::testing::ChildProcessOptions options;
      options.program = "/usr/bin/python3";
      options.out = rlswarm::testing::ChildProcessOptions::Sink::kNull;
      rlswarm::testing::ChildProcess python({"python3", "-c", kPythonCheck, path}, options);
      EXPECT_EQ(python.Wait(std::chrono::seconds(30)), 0)
          << "python3's json module rejects " << path;
    } else {
      RecordProperty("python_check", "skipped: no /usr/bin/python3");
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rlswarm::learner
