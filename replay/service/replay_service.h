#pragma once

// ReplayService: one shard of the replay service. It owns a Table and serves
// it over rpc (the methods and their wire format are in protocol.h), writes
// checkpoints periodically, on request and when stopped, and resumes from
// the newest valid checkpoint when started on the same directory.
//
// Data path: the rpc server's I/O thread decodes a request and hands it to
// a worker; insert and sample go to the table's *Async calls, so a call the
// rate limiter holds becomes a waiter and the worker moves on (a waiting
// sampler never blocks inserts); the waiter's callback replies later through
// the Responder, from whichever thread made it admissible. A maintenance
// thread expires waiters whose deadline passed (DeadlineExceeded replies)
// and, for a global samples-per-insert ratio, polls the other shards'
// totals and hands their sum to Table::SetRemoteCounts. A checkpoint thread
// writes every checkpoint_interval; a checkpoint never stops the table
// (Checkpointer takes a copy-on-write snapshot under the lock and writes
// without it), and a failed one (a full disk) is logged and counted while
// the shard keeps serving and the last good checkpoint stays.
//
// Stop() (also from the destructor): close the table (every waiter gets
// Cancelled), stop the server (queued requests get Unavailable), join the
// threads, then write a last checkpoint: everything a client was told is
// inserted is in it.
//
// Thread safety: all public methods are thread safe; Start and Stop once each.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"
#include "replay/checkpoints/checkpointer.h"
#include "replay/table.h"
#include "rpc/client.h"
#include "rpc/server.h"

namespace rlswarm::replay {

struct ReplayServiceOptions {
  int shard = 0;
  int num_shards = 1;
  TableOptions table;
  rpc::ServerOptions server;
  // Where checkpoints go; none = no checkpoints (and nothing is resumed).
  std::optional<CheckpointerOptions> checkpoints;
  // 0 = only on request and on Stop().
  std::chrono::milliseconds checkpoint_interval{0};
  bool checkpoint_on_stop = true;
  // Global ratio: the endpoints of the other shards (not this one). Empty =
  // every shard keeps its own ratio. The remote counts are at most about
  // peer_poll_interval old, so the global cursor can drift by what the other
  // shards do in that time.
  std::vector<std::string> peers;
  rpc::ClientOptions peer_client;  // endpoint ignored; security, timeouts
  std::chrono::milliseconds peer_poll_interval{20};

  // Throws InvalidArgument naming the bad option.
  void Validate() const;
};

struct ReplayServiceStats {
  std::int64_t checkpoints_written = 0;
  std::int64_t checkpoints_failed = 0;
  std::string last_checkpoint_error;
  std::optional<CheckpointInfo> last_checkpoint;
  std::optional<CheckpointInfo> loaded;  // what Start() resumed from
  std::int64_t peer_polls_failed = 0;
};

class ReplayService {
 public:
  // Throws InvalidArgument for bad options.
  explicit ReplayService(ReplayServiceOptions options);
  ~ReplayService();
  ReplayService(const ReplayService&) = delete;
  ReplayService& operator=(const ReplayService&) = delete;

  // Restores the newest valid checkpoint (or starts empty), binds and
  // serves. Throws Unavailable if the endpoint cannot be bound,
  // FailedPrecondition if the checkpoint directory holds another table.
  void Start();
  // The bound endpoint ("tcp://127.0.0.1:40123").
  std::string endpoint() const;
  // See the class comment. Idempotent; rethrows nothing (a failed last
  // checkpoint is logged and counted).
  void Stop();

  // Writes a checkpoint now (blocks the caller for the write). Throws
  // ResourceExhausted on a full disk, FailedPrecondition without a
  // checkpoint directory.
  CheckpointInfo WriteCheckpoint();
  Table& table();
  ReplayServiceStats stats() const;
  // info's JSON reply (shard, table, server and checkpoint state).
  std::string InfoJson() const;

 private:
  void RegisterHandlers();
  void MaintenanceLoop();
  void CheckpointLoop();
  void PollPeers();
  // The table's hook: a call now waits until `deadline`; wakes the
  // maintenance thread if it sleeps past it.
  void WaiterParked(Deadline deadline) RLSWARM_EXCLUDES(mu_);

  const ReplayServiceOptions options_;
  std::unique_ptr<Checkpointer> checkpointer_;
  std::unique_ptr<Table> table_;
  std::unique_ptr<rpc::Server> server_;
  std::vector<std::unique_ptr<rpc::Client>> peers_;

  mutable Mutex mu_;
  CondVar wake_;
  // The maintenance thread sleeps until maintenance_until_ (max while it
  // is awake), and wakes early for a waiter with an earlier deadline.
  CondVar maintenance_wake_;
  std::chrono::steady_clock::time_point maintenance_until_ RLSWARM_GUARDED_BY(mu_) =
      std::chrono::steady_clock::time_point::max();
  bool earlier_waiter_ RLSWARM_GUARDED_BY(mu_) = false;
  bool started_ RLSWARM_GUARDED_BY(mu_) = false;
  bool stopping_ RLSWARM_GUARDED_BY(mu_) = false;
  ReplayServiceStats stats_ RLSWARM_GUARDED_BY(mu_);
  std::vector<TableTotals> peer_totals_ RLSWARM_GUARDED_BY(mu_);
  std::vector<bool> peer_call_pending_ RLSWARM_GUARDED_BY(mu_);

  // Started by Start, joined by Stop.
  std::thread maintenance_;
  std::thread checkpointing_;
};

}  // namespace rlswarm::replay
