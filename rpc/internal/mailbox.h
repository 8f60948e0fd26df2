#pragma once

// Internal: how other threads hand work to an I/O thread that sleeps in
// zmq_poll. Items travel through a mutex-protected vector (so every hand-over
// is a plain happens-before edge, visible to ThreadSanitizer); an inproc
// PUSH/PULL pair only wakes the poll. Wake-ups are coalesced: at most one
// signal is in flight until the I/O thread takes the items.
//
// Thread-safety: Post and Wake from any thread. signal_socket, Take and
// Close only from the I/O thread (or after it has been joined). The PUSH
// socket is used only under mutex_, which is how ZeroMQ allows a socket to
// be used by more than one thread (a full memory barrier between users).

#include <mutex>
#include <string_view>
#include <utility>
#include <vector>
#include <zmq.hpp>

namespace rlswarm::rpc::internal {

// The inproc PUSH/PULL pair with a unique name in the process context.
class InprocWake {
 public:
  explicit InprocWake(std::string_view what);
  InprocWake(const InprocWake&) = delete;
  InprocWake& operator=(const InprocWake&) = delete;

  zmq::socket_t& receiver() { return receiver_; }
  void Signal();  // never blocks; the caller serialises calls
  void Drain();   // receives every pending signal, without blocking
  void CloseSender();
  void CloseReceiver();

 private:
  zmq::socket_t receiver_;  // PULL, owned by the I/O thread
  zmq::socket_t sender_;    // PUSH, used under the owner's mutex
};

template <class T>
class Mailbox {
 public:
  explicit Mailbox(std::string_view what) : wake_(what) {}

  // Queues `item` and wakes the I/O thread. Returns false, leaving `item`
  // untouched, once the mailbox is closed.
  bool Post(T&& item) {
    std::lock_guard lock(mutex_);
    if (closed_) return false;
    items_.push_back(std::move(item));
    SignalLocked();
    return true;
  }

  // Wakes the I/O thread without an item (e.g. to make it see a stop flag).
  void Wake() {
    std::lock_guard lock(mutex_);
    if (!closed_) SignalLocked();
  }

  // I/O thread: poll this for ZMQ_POLLIN.
  zmq::socket_t& signal_socket() { return wake_.receiver(); }

  // I/O thread: everything posted so far.
  std::vector<T> Take() {
    wake_.Drain();
    std::lock_guard lock(mutex_);
    signalled_ = false;
    return std::exchange(items_, {});
  }

  // I/O thread or after it exited: later Posts fail. Returns the items not
  // yet taken. Idempotent.
  std::vector<T> Close() {
    std::vector<T> rest;
    {
      std::lock_guard lock(mutex_);
      if (!closed_) {
        closed_ = true;
        wake_.CloseSender();
      }
      rest.swap(items_);
    }
    wake_.CloseReceiver();
    return rest;
  }

 private:
  void SignalLocked() {
    if (signalled_) return;
    signalled_ = true;
    wake_.Signal();
  }

  InprocWake wake_;
  std::mutex mutex_;
  std::vector<T> items_;    // guarded by mutex_
  bool signalled_ = false;  // guarded by mutex_
  bool closed_ = false;     // guarded by mutex_
};

}  // namespace rlswarm::rpc::internal
