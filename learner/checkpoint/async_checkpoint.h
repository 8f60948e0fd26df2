#pragma once

// Asynchronous sharded checkpoints, in the manner of PyTorch DCP's
// async_save: the training thread only copies its shards into host memory
// and goes on training; a writer thread makes them durable. Same on-disk
// format and the same atomic publish as the synchronous SaveCheckpoint
// (checkpoint.h), so checkpoint_reader.h reads both.
//
// Data path of one save (update N):
//   training thread, in Save(): wait for the previous save, if still in
//     flight -> copy params, target and optimizer state into the host buffer
//     (allocated and pre-faulted at the first save, reused by every later
//     one; pinned on CUDA) -> hand the job to the writer -> return.
//   writer thread: shard-<rank>.bin written and fsynced -> this rank reports
//     "ok <crc32c>" (or "error <why>") under the save's key in the c10d Store
//     -> rank 0 waits for every shard writer's report (bounded by
//     agreement_timeout) -> manifest.json.tmp, fsync, rename to
//     manifest.json, fsync the directory -> old checkpoints removed.
//
// Why the Store, not a collective: c10d matches collectives by issue order
// and one thread (the training thread) issues them; a collective from the
// writer would interleave with the training thread's all-gathers in an order
// that differs between ranks. A collective the training thread issued later
// (at the next save) would publish a checkpoint only one interval after its
// data was durable. The Store is a separate channel: each rank's writer
// sets one key per save, rank 0's writer checks for those keys until a
// deadline, and a rank that died mid-save shows up as a timeout there. The
// one collective involved is issued by the training thread, at the first
// Save() (a point every rank reaches in the same order): one control-plane
// all-reduce agrees on a random id that prefixes every key, so the keys of
// an earlier incarnation of the job (a launcher's store outlives restarts)
// cannot vouch for this one's files.
//
// One save in flight: Save() waits for the previous save to finish before it
// reuses the buffer. It waits rather than skipping because a skip would be
// each rank's own decision (its writer's progress) and ranks would disagree
// on which updates have a checkpoint: rank 0 would wait for shards that a
// skipping peer never writes. Waiting keeps every rank saving every
// requested update; the wait counts in the reported stall.
//
// Failures: an I/O error on any rank, or a peer that never reports (it died:
// rank 0's wait times out), is logged (spdlog error) and reported through
// TakeFinished(); no manifest is written, so that update's directory stays
// invisible to readers and the previous checkpoint remains the newest
// loadable one. Training is not interrupted. A crash (kill -9) at any point
// leaves the same state: the manifest, written last and renamed atomically,
// exists only once every shard is durable.
//
// Thread safety: Save(), Wait() and TakeFinished() are called by the thread
// that drives the model (the training thread); in_flight() and the counters
// from any thread. The writer thread touches only the host buffer, the
// files and the store, never the model.

#include <ATen/core/Tensor.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/thread_annotations.h"
#include "common/worker_thread.h"
#include "learner/checkpoint/checkpoint.h"
#include "learner/dist/torch_adapter.h"
#include "learner/fsdp/sharded_model.h"

namespace rlswarm::learner {

struct AsyncCheckpointOptions {
  // Checkpoints go to <root>/update-N; the newest `keep` complete ones stay
  // (keep <= 0: none removed).
  std::string root;
  int keep = 2;
  // Bounds rank 0's wait for the other ranks' reports (a slow disk, a dead
  // peer): long enough for the slowest rank's write and fsync.
  std::chrono::milliseconds agreement_timeout{300000};
  // Test hook, run on the writer thread at "before_write" (before this
  // rank's file is written), "shard_durable" (written and fsynced, not yet
  // reported) and, on rank 0, "before_publish" (every shard reported ok, no
  // manifest yet). It may block: the tests pause the writer there to kill
  // the process at a known point. Null: none.
  std::function<void(std::string_view stage, int64_t update_count)> writer_hook;

  // Throws InvalidArgument: empty root, non-positive agreement_timeout.
  void Validate() const;
};

// What one save cost and how it ended, for this rank.
struct AsyncSaveReport {
  int64_t update_count = 0;
  std::string dir;
  // This rank's part succeeded; on rank 0: the checkpoint was published.
  bool ok = false;
  std::string error;  // why not, when !ok
  // The training thread's time in Save(): the stall this save cost it...
  double stall_seconds = 0;
  // ...of which waiting for the previous save to finish.
  double wait_seconds = 0;
  // The writer's time, from the hand-over to done (rank 0: to published).
  double write_seconds = 0;
  int64_t bytes = 0;  // this rank's file
};

class AsyncCheckpointer {
 public:
  // `online` and `target` (may be null) must outlive this object. `store`:
  // the rendezvous store (ProcessGroupHandle::store); required when the
  // world size is > 1, ignored at 1. Starts the writer thread. Throws
  // InvalidArgument (bad options, no store at world > 1).
  AsyncCheckpointer(AsyncCheckpointOptions options, ShardedModel& online,
                    const ShardedModel* target, c10::intrusive_ptr<c10d::Store> store);
  // Lets the save in flight finish its write, but cancels rank 0's wait for
  // the other ranks' reports (that save is then not published: logged as
  // failed), and joins the writer. A blocking test hook is not cancelled.
  ~AsyncCheckpointer();
  AsyncCheckpointer(const AsyncCheckpointer&) = delete;
  AsyncCheckpointer& operator=(const AsyncCheckpointer&) = delete;

  // Starts the save of update progress.update_count and returns the
  // directory it will be published in. Collective in the learner's sense:
  // every rank calls it at the same update, and the first call issues one
  // control-plane all-reduce (see above). Blocks while the previous save is
  // in flight, then for the copy into the host buffer, and logs that stall.
  // Never throws for a write error (reported by TakeFinished); collective
  // errors of the first call propagate.
  std::string Save(const CheckpointProgress& progress);

  // Waits up to `timeout` for the save in flight; true when none is left.
  bool Wait(std::chrono::milliseconds timeout);
  bool in_flight() const;

  // The report of a save that finished since the last call, once; nullopt
  // when none did. Never blocks.
  std::optional<AsyncSaveReport> TakeFinished();

  // Saves that had to wait for the previous one, and saves that failed.
  int64_t saves_waited() const { return saves_waited_.load(); }
  int64_t saves_failed() const { return saves_failed_.load(); }

 private:
  struct Job;
  // The writer thread's part of a save: Write, then the report.
  void WriteAndReport(Job& job);
  // This rank's part of one save, on the writer thread; throws on failure.
  void Write(Job& job);
  // Rank 0: waits for every shard's report; returns the CRC-32s. Throws
  // DeadlineExceeded (a rank never reported) or Unavailable (one failed).
  std::vector<uint32_t> AwaitShards(const Job& job);

  AsyncCheckpointOptions options_;
  ShardedModel& online_;
  const ShardedModel* target_;
  const int rank_;
  const int world_size_;
  const int shard_count_;
  // The rendezvous store (rpc_store.h, thread-safe); the writer only issues
  // short calls (set, check, get), so sharing it with the process groups is
  // safe.
  c10::intrusive_ptr<c10d::Store> store_;
  std::string session_;     // key prefix, agreed at the first Save()
  int64_t sequence_ = 0;    // saves started under session_
  at::Tensor host_buffer_;  // [sections, local_numel]; written only while no save is in flight

  mutable Mutex mu_;
  CondVar changed_;
  bool in_flight_ RLSWARM_GUARDED_BY(mu_) = false;
  bool stop_ RLSWARM_GUARDED_BY(mu_) = false;
  std::optional<AsyncSaveReport> finished_ RLSWARM_GUARDED_BY(mu_);
  std::atomic<int64_t> saves_waited_{0};
  std::atomic<int64_t> saves_failed_{0};
  WorkerThread writer_;  // last: started once every member exists, stopped first
};

}  // namespace rlswarm::learner
