#pragma once

// Internal: how other threads hand work to an I/O thread that sleeps in
// poll. Items travel through a mutex-protected vector (so every hand-over
// is a plain happens-before edge, visible to ThreadSanitizer); an eventfd
// only wakes the poll. An owner whose I/O thread sleeps somewhere else gives
// the mailbox its own wake-up function instead (the server's I/O thread
// sleeps inside ZeroMQ's receive and is woken by a message, see server.cc).
// Wake-ups are coalesced: at most one signal is in flight until the I/O
// thread takes the items.
//
// Why an eventfd and not an inproc PUSH/PULL pair: a ZeroMQ signal costs a
// message allocation, a pipe write, a command to the receiving socket and a
// recv (with libzmq's own eventfd underneath); the eventfd is one write and
// one read. On this project's VM that is a measurable share of a small call.
// (The server pays that cost for replies made on other threads, so that its
// I/O thread can sleep inside ZeroMQ's receive, two system calls fewer for
// every request.)
//
// Thread-safety: Post and Wake from any thread. PostFromOwner, wake_fd,
// ConsumeWake, Take and Close only from the I/O thread (or after it has been
// joined). The eventfd lives as long as the Mailbox, so a Post that races
// with Close still writes to a valid descriptor; a wake-up function must
// stay callable as long, from any thread, and must not throw.

#include <functional>
#include <utility>
#include <vector>

#include "common/thread_annotations.h"

namespace rlswarm::rpc::internal {

// A nonblocking eventfd; Signal never blocks.
class EventFd {
 public:
  EventFd();  // throws Internal if the kernel refuses
  ~EventFd();
  EventFd(const EventFd&) = delete;
  EventFd& operator=(const EventFd&) = delete;

  int fd() const { return fd_; }
  void Signal();  // never blocks
  void Drain();   // consumes pending signals, without blocking

 private:
  int fd_ = -1;
};

template <class T>
class Mailbox {
 public:
  // `wake`, if given, replaces the eventfd signal (wake_fd then never
  // becomes readable).
  explicit Mailbox(std::function<void()> wake = {}) : wake_function_(std::move(wake)) {}

  // Queues `item` and wakes the I/O thread. Returns false, leaving `item`
  // untouched, once the mailbox is closed.
  bool Post(T&& item) {
    bool signal = false;
    {
      MutexLock lock(mutex_);
      if (closed_) return false;
      items_.push_back(std::move(item));
      signal = !std::exchange(signalled_, true);
    }
    if (signal) Signal();  // outside the lock: the woken thread takes it at once
    return true;
  }

  // I/O thread only: queues `item` without a wake-up, because the I/O thread
  // calls Take before it next sleeps. Returns false once closed.
  bool PostFromOwner(T&& item) {
    MutexLock lock(mutex_);
    if (closed_) return false;
    items_.push_back(std::move(item));
    return true;
  }

  // Wakes the I/O thread without an item (e.g. to make it see a stop flag).
  void Wake() {
    {
      MutexLock lock(mutex_);
      if (closed_) return;
      signalled_ = true;
    }
    Signal();
  }

  // Whether items wait to be taken (any thread).
  bool HasItems() {
    MutexLock lock(mutex_);
    return !items_.empty();
  }

  // I/O thread: poll this for ZMQ_POLLIN ({nullptr, wake_fd(), ZMQ_POLLIN}).
  int wake_fd() const { return wake_.fd(); }

  // I/O thread: call when zmq_poll reports wake_fd() readable, before Take.
  // Draining only then (never on a guess) keeps the fd's state exact: a
  // signal written after this read makes the next poll return at once.
  void ConsumeWake() { wake_.Drain(); }

  // I/O thread: everything posted so far. Swaps into `out` (cleared first),
  // so the caller can reuse one vector's capacity round after round. A Post
  // racing with this either lands in `out` (its signal then only causes one
  // empty round) or signals again after it.
  void Take(std::vector<T>& out) {
    out.clear();
    MutexLock lock(mutex_);
    signalled_ = false;
    out.swap(items_);
  }
  std::vector<T> Take() {
    std::vector<T> out;
    Take(out);
    return out;
  }

  // I/O thread or after it exited: later Posts fail. Returns the items not
  // yet taken. Idempotent.
  std::vector<T> Close() {
    std::vector<T> rest;
    MutexLock lock(mutex_);
    closed_ = true;
    rest.swap(items_);
    return rest;
  }

 private:
  void Signal() {
    if (wake_function_) {
      wake_function_();
    } else {
      wake_.Signal();
    }
  }

  const std::function<void()> wake_function_;
  EventFd wake_;
  Mutex mutex_;
  std::vector<T> items_ RLSWARM_GUARDED_BY(mutex_);
  bool signalled_ RLSWARM_GUARDED_BY(mutex_) = false;
  bool closed_ RLSWARM_GUARDED_BY(mutex_) = false;
};

}  // namespace rlswarm::rpc::internal
