#pragma once

// ReplayWriter: what an actor uses to send items to a sharded replay
// service. It stages appended items into batches (sealed at max_batch_items,
// after flush_interval, or when the policy version or the presence of
// priorities changes) and sends each sealed batch to one shard, round-robin
// over the shards that are up, with up to max_in_flight batches
// unacknowledged. A batch is sent by the thread that seals it or by the
// completion of an earlier batch (on the rpc client's I/O thread), so no
// thread is woken per batch; a timer thread only seals batches staged for
// flush_interval and resends after retry_backoff.
//
// Failure handling:
//   * A batch that fails (shard killed or restarting: Unavailable; the
//     shard's rate limiter held it past insert_timeout: DeadlineExceeded) is
//     kept and sent again, to another shard if one is up; the failing shard
//     is skipped for retry_backoff. Delivery is at least once: a batch whose
//     reply was lost with its connection may be stored twice.
//   * A batch the shard rejects (InvalidArgument: the service's signature
//     differs) is dropped, counted and logged: resending cannot help.
//   * Memory is bounded: at most max_buffered_batches sealed batches wait,
//     plus up to max_in_flight that failed and wait to be resent (they are
//     never dropped for a full buffer). When that many wait (replay
//     unreachable, or slower than the actor, or holding inserts back),
//     Append blocks up to max_block for room, then drops the oldest waiting
//     batch and counts its items in stats().items_dropped; until the buffer
//     has room again, later appends drop without waiting. The actor never
//     grows without bound and stops at most max_block per outage.
//
// Thread safety: all public methods are thread safe.

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"
#include "replay/service/buffer_pool.h"
#include "replay/table_types.h"
#include "rpc/client.h"

namespace rlswarm::replay {

struct ReplayWriterOptions {
  std::vector<std::string> endpoints;  // shard i serves at endpoints[i]
  rpc::ClientOptions client;           // endpoint ignored; security, heartbeats
  Signature signature;                 // of the items appended
  std::int64_t max_batch_items = 256;
  std::chrono::milliseconds flush_interval{50};
  int max_in_flight = 4;
  std::int64_t max_buffered_batches = 64;
  std::chrono::milliseconds insert_timeout{5000};
  std::chrono::milliseconds max_block{1000};
  std::chrono::milliseconds retry_backoff{200};
  // Throws InvalidArgument naming the bad option.
  void Validate() const;
};

struct ReplayWriterStats {
  std::int64_t items_appended = 0;
  std::int64_t items_acknowledged = 0;  // stored by a shard
  std::int64_t items_dropped = 0;       // buffer full for max_block, or rejected
  std::int64_t batches_sent = 0;
  std::int64_t batches_retried = 0;
  std::int64_t batches_rejected = 0;
  std::int64_t in_flight = 0;  // batches
  std::int64_t buffered = 0;   // sealed batches waiting, at most max_buffered_batches
  std::int64_t resending = 0;  // failed batches waiting to go again, at most max_in_flight
  std::int64_t staged_items = 0;
};

class ReplayWriter {
 public:
  // Connects lazily (no shard needs to be up yet). Throws InvalidArgument.
  explicit ReplayWriter(ReplayWriterOptions options);
  ~ReplayWriter();  // Close()
  ReplayWriter(const ReplayWriter&) = delete;
  ReplayWriter& operator=(const ReplayWriter&) = delete;

  // Copies N items (one FieldView [N, ...] per signature field, N
  // priorities or none) into the staging batch. Throws InvalidArgument (and
  // stages nothing) if the items do not match the signature; may block up
  // to max_block when the buffer is full (see above); Cancelled after Close.
  void Append(const InsertBatch& items);
  // Sends `items` as one batch of their own without copying a byte: the
  // frames point into the memory the views show, which `owner` keeps alive
  // (and which must not change) until the batch is acknowledged or
  // dropped. For producers that already hold whole batches (a VectorEnv of
  // at least max_batch_items envs, a dataset loader, another replay):
  // items staged by Append are sealed first, so the order is kept. Checks,
  // blocking and dropping as Append.
  void AppendShared(const InsertBatch& items, std::shared_ptr<const void> owner);
  // Seals the staged batch and waits until every batch is acknowledged or
  // dropped; false if `timeout` passed first.
  bool Flush(std::chrono::milliseconds timeout);
  // Stops sending; batches not yet acknowledged are dropped and counted.
  // Idempotent.
  void Close();
  // For a producer that is stopping (an actor's Stop()): wakes an Append or
  // AppendShared waiting for room, and keeps later ones from waiting; with
  // the buffer full they drop the oldest waiting batch at once, as after
  // max_block. Sending, Flush and Close go on as before. Never blocks but
  // on the lock; idempotent.
  void StopWaiting();
  ReplayWriterStats stats() const;

 private:
  struct Batch;
  struct Staging;

  // Validates `items` against the signature (and their priorities); the
  // number of items.
  std::int64_t Validate(const InsertBatch& items, std::vector<const std::byte*>& ordered) const;
  void WaitForRoomLocked(MutexLock& lock) RLSWARM_REQUIRES(mu_);
  void PushReadyLocked(std::shared_ptr<Batch> batch) RLSWARM_REQUIRES(mu_);
  void SealLocked() RLSWARM_REQUIRES(mu_);
  // A failed batch to resend or a sealed one waiting.
  bool HasBatchesToSendLocked() const RLSWARM_REQUIRES(mu_);
  struct Dispatch {
    std::shared_ptr<Batch> batch;
    int shard = 0;
  };
  // Takes the ready batches that may go now (in flight < max_in_flight, a
  // shard up); the caller sends them with SendAll after unlocking mu_.
  std::vector<Dispatch> TakeDispatchesLocked() RLSWARM_REQUIRES(mu_);
  void SendAll(std::vector<Dispatch> dispatches);
  void TimerLoop();
  void Send(std::shared_ptr<Batch> batch, int shard);
  void OnReply(std::shared_ptr<Batch> batch, int shard, std::exception_ptr error);
  int PickShardLocked(std::chrono::steady_clock::time_point now) RLSWARM_REQUIRES(mu_);

  const ReplayWriterOptions options_;
  std::vector<std::unique_ptr<rpc::Client>> shards_;
  // One per field (the fields' buffers differ in size): staging buffers
  // come from here and return after their batch is acknowledged.
  std::vector<std::shared_ptr<BufferPool>> pools_;

  mutable Mutex mu_;
  CondVar changed_;     // room, acknowledgements (Append, Flush)
  CondVar timer_wake_;  // closed, a shard failed
  bool closed_ RLSWARM_GUARDED_BY(mu_) = false;
  // The buffer stayed full for max_block: drop without waiting.
  bool dropping_ RLSWARM_GUARDED_BY(mu_) = false;
  // StopWaiting() was called: appends never wait for room.
  bool never_wait_ RLSWARM_GUARDED_BY(mu_) = false;
  std::unique_ptr<Staging> staging_ RLSWARM_PT_GUARDED_BY(mu_);  // set once, by the constructor
  std::chrono::steady_clock::time_point staged_since_ RLSWARM_GUARDED_BY(mu_);
  std::deque<std::shared_ptr<Batch>> ready_ RLSWARM_GUARDED_BY(mu_);
  // Batches whose call failed (at most max_in_flight): they go before
  // ready_ and are never dropped for a full buffer, so they have their own
  // queue that PushReadyLocked cannot reach.
  std::deque<std::shared_ptr<Batch>> resend_ RLSWARM_GUARDED_BY(mu_);
  std::vector<std::chrono::steady_clock::time_point> down_until_ RLSWARM_GUARDED_BY(mu_);
  int next_shard_ RLSWARM_GUARDED_BY(mu_) = 0;
  ReplayWriterStats stats_ RLSWARM_GUARDED_BY(mu_);
  std::thread timer_;
};

}  // namespace rlswarm::replay
