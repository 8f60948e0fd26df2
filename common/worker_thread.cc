#include "common/worker_thread.h"

#include <utility>

namespace rlswarm {

WorkerThread::WorkerThread() : thread_([this] { Run(); }) {}

WorkerThread::~WorkerThread() {
  {
    MutexLock lock(mu_);
    stop_ = true;  // the thread finishes what is queued first
  }
  cv_.NotifyAll();
  thread_.join();
}

void WorkerThread::Run() {
  MutexLock lock(mu_);
  while (true) {
    cv_.Wait(lock, [this]() RLSWARM_REQUIRES(mu_) { return !tasks_.empty() || stop_; });
    if (tasks_.empty()) return;
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    busy_ = true;
    lock.Unlock();
    task();
    task = nullptr;  // what it holds goes before the task counts as done
    lock.Lock();
    busy_ = false;
    cv_.NotifyAll();  // Drain, WaitIdle
  }
}

void WorkerThread::Post(std::function<void()> task) {
  {
    MutexLock lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.NotifyAll();
}

int WorkerThread::PostReplacingQueued(std::function<void()> task) {
  std::deque<std::function<void()>> dropped;  // destroyed outside the lock
  {
    MutexLock lock(mu_);
    dropped.swap(tasks_);
    tasks_.push_back(std::move(task));
  }
  cv_.NotifyAll();
  return static_cast<int>(dropped.size());
}

void WorkerThread::Drain() {
  MutexLock lock(mu_);
  cv_.Wait(lock, [this]() RLSWARM_REQUIRES(mu_) { return IdleLocked(); });
}

bool WorkerThread::WaitIdle(std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  return cv_.WaitFor(lock, timeout, [this]() RLSWARM_REQUIRES(mu_) { return IdleLocked(); });
}

bool WorkerThread::idle() const {
  MutexLock lock(mu_);
  return IdleLocked();
}

}  // namespace rlswarm
