#include "learner/checkpoint/async_checkpoint.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <random>

#include "common/errors.h"
#include "learner/checkpoint/checkpoint_writing.h"

namespace rlswarm::learner {
namespace {

namespace fs = std::filesystem;
namespace cw = checkpoint_writing;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string Text(const std::vector<uint8_t>& b) { return {b.begin(), b.end()}; }

}  // namespace

// One save as the writer sees it: everything it needs was taken from the
// model on the training thread.
struct AsyncCheckpointer::Job {
  CheckpointProgress progress;
  fs::path dir;
  std::string key_prefix;   // <session>/<sequence>/: this save's keys
  nlohmann::json manifest;  // rank 0: the draft, CRC-32s filled in by the writer
  Clock::time_point handed_over;
  AsyncSaveReport report;
};

void AsyncCheckpointOptions::Validate() const {
  if (root.empty()) throw InvalidArgument("async checkpoint: empty root");
  if (agreement_timeout.count() <= 0) {
    throw InvalidArgument("async checkpoint: agreement_timeout must be positive");
  }
}

AsyncCheckpointer::AsyncCheckpointer(AsyncCheckpointOptions options, ShardedModel& online,
                                     const ShardedModel* target,
                                     c10::intrusive_ptr<c10d::Store> store)
    : options_(std::move(options)),
      online_(online),
      target_(target),
      rank_(online.communicator().rank()),
      world_size_(online.communicator().world_size()),
      shard_count_(online.shard_count()),
      store_(std::move(store)) {
  options_.Validate();
  if (world_size_ > 1) {
    if (!store_) throw InvalidArgument("async checkpoint: world size > 1 needs the store");
  }
}

AsyncCheckpointer::~AsyncCheckpointer() {
  {
    MutexLock lock(mu_);
    stop_ = true;  // a save waiting for the other ranks' reports gives up
  }
  changed_.NotifyAll();
  // writer_, destroyed first of the members, then finishes the save in
  // flight and joins.
}

std::string AsyncCheckpointer::Save(const CheckpointProgress& progress) {
  const auto t0 = Clock::now();
  if (session_.empty()) {
    // The one collective, on the training thread at a point every rank
    // reaches in order (see the header): rank 0's random id, summed.
    uint64_t id = 0;
    if (rank_ == 0) id = std::random_device{}() | (uint64_t{std::random_device{}()} << 32);
    if (world_size_ > 1) {
      at::Tensor t = at::zeros({1}, at::kLong);
      t.fill_(static_cast<int64_t>(id >> 1));  // non-negative in int64
      online_.communicator().ControlAllReduceSum(t, "checkpoint session");
      id = static_cast<uint64_t>(t.item<int64_t>());
    }
    session_ = "rlswarm/checkpoint/" + std::to_string(id) + "/";
  }
  const auto t_wait = Clock::now();
  {
    MutexLock lock(mu_);
    if (in_flight_) {
      ++saves_waited_;
      changed_.Wait(lock, [this]() RLSWARM_REQUIRES(mu_) { return !in_flight_; });
    }
  }
  const auto t_waited = Clock::now();

  auto job = std::make_unique<Job>();
  job->progress = progress;
  job->dir = fs::path(options_.root) / cw::DirName(progress.update_count);
  job->key_prefix = session_ + std::to_string(sequence_++) + "/";
  const std::vector<std::string> sections = cw::SectionNames(online_, target_);
  // Ranks past the shard count (no_shard) hold a copy of shard 0 and write
  // nothing.
  if (rank_ < shard_count_) {
    const int64_t rows = static_cast<int64_t>(sections.size());
    const int64_t local_numel = online_.LocalShard().numel();
    if (!host_buffer_.defined() || host_buffer_.size(0) != rows ||
        host_buffer_.size(1) != local_numel) {
      at::TensorOptions o = at::TensorOptions().dtype(online_.LocalShard().scalar_type());
      if (online_.LocalShard().is_cuda()) o = o.pinned_memory(true);
      // zeros, not empty: the memset faults every page in now, once, rather
      // than during the copy of every later save.
      host_buffer_ = at::zeros({rows, local_numel}, o);
    }
    cw::CopySections(online_, target_, host_buffer_);
  }
  const int64_t bytes = static_cast<int64_t>(sections.size()) * online_.LocalShard().numel() *
                        static_cast<int64_t>(online_.LocalShard().element_size());
  if (rank_ == 0) job->manifest = cw::ManifestDraft(online_, sections, progress, bytes);
  const auto t_copied = Clock::now();

  job->report.update_count = progress.update_count;
  job->report.dir = job->dir.string();
  job->report.bytes = rank_ < shard_count_ ? bytes : 0;  // this rank's file
  job->report.wait_seconds = Seconds(t_waited - t_wait);
  job->report.stall_seconds = Seconds(t_copied - t0);
  job->handed_over = t_copied;
  const std::string dir = job->report.dir;
  spdlog::info(
      "checkpoint update {}: training blocked {:.1f} ms ({:.1f} ms waiting for the previous save, "
      "{:.1f} ms copying {:.1f} MB); the writer thread makes it durable",
      progress.update_count, 1e3 * job->report.stall_seconds, 1e3 * job->report.wait_seconds,
      1e3 * Seconds(t_copied - t_waited), static_cast<double>(job->report.bytes) / 1e6);
  {
    MutexLock lock(mu_);
    in_flight_ = true;
  }
  writer_.Post([this, job = std::shared_ptr<Job>(std::move(job))] { WriteAndReport(*job); });
  return dir;
}

bool AsyncCheckpointer::Wait(std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  return changed_.WaitFor(lock, timeout, [this]() RLSWARM_REQUIRES(mu_) { return !in_flight_; });
}

bool AsyncCheckpointer::in_flight() const {
  MutexLock lock(mu_);
  return in_flight_;
}

std::optional<AsyncSaveReport> AsyncCheckpointer::TakeFinished() {
  MutexLock lock(mu_);
  std::optional<AsyncSaveReport> r = std::move(finished_);
  finished_.reset();
  return r;
}

void AsyncCheckpointer::WriteAndReport(Job& job) {
  // An exception never leaves the writer thread: it becomes the report.
  try {
    Write(job);
    job.report.ok = true;
  } catch (const std::exception& e) {
    job.report.error = e.what();
    ++saves_failed_;
    spdlog::error(
        "checkpoint update {} failed on rank {}: {}; the previous checkpoint stays the newest "
        "loadable one",
        job.progress.update_count, rank_, e.what());
  }
  job.report.write_seconds = Seconds(Clock::now() - job.handed_over);
  if (job.report.ok) {
    spdlog::info("checkpoint update {}: {} after {:.2f} s on the writer thread",
                 job.progress.update_count, rank_ == 0 ? "published" : "shard durable",
                 job.report.write_seconds);
  }
  {
    MutexLock lock(mu_);
    finished_ = std::move(job.report);
    in_flight_ = false;
  }
  changed_.NotifyAll();
}

void AsyncCheckpointer::Write(Job& job) {
  auto hook = [&](std::string_view stage) {
    if (options_.writer_hook) options_.writer_hook(stage, job.progress.update_count);
  };
  const std::string my_key = job.key_prefix + "shard-" + std::to_string(rank_);
  if (rank_ < shard_count_) {
    uint32_t crc = 0;
    try {
      fs::create_directories(job.dir);
      // A stale manifest from an interrupted earlier save of this update
      // must not vouch for the new files.
      if (rank_ == 0) fs::remove(job.dir / kCheckpointManifest);
      hook("before_write");
      const void* data = host_buffer_.data_ptr();
      const size_t size = host_buffer_.nbytes();
      crc = ShardCrc(data, size);
      cw::WriteDurably(job.dir / ("shard-" + std::to_string(rank_) + ".bin"), data, size);
      hook("shard_durable");
    } catch (const std::exception& e) {
      // Rank 0 stops waiting for this shard as soon as it reads the error.
      if (world_size_ > 1) store_->set(my_key, Bytes(std::string("error ") + e.what()));
      throw;
    }
    if (world_size_ > 1) store_->set(my_key, Bytes("ok " + std::to_string(crc)));
    if (rank_ != 0) return;
    std::vector<uint32_t> crcs = world_size_ > 1 ? AwaitShards(job) : std::vector<uint32_t>{crc};
    for (int s = 0; s < shard_count_; ++s) job.manifest["files"][s]["crc32c"] = crcs[s];
    hook("before_publish");
    cw::PublishManifest(job.dir, job.manifest);
    cw::RemoveOld(options_.root, options_.keep);
  }
}

std::vector<uint32_t> AsyncCheckpointer::AwaitShards(const Job& job) {
  // The store holds each wait until the key is set, so a report wakes this
  // thread at once. A held wait cannot be cancelled, and the destructor must
  // not sit out the whole agreement timeout behind a dead peer: so each wait
  // is bounded by kHeldWait, and stop_ is checked between them.
  constexpr auto kHeldWait = std::chrono::milliseconds(100);
  const auto deadline = Clock::now() + options_.agreement_timeout;
  std::vector<uint32_t> crcs(shard_count_);
  std::vector<std::string> keys;
  for (int s = 0; s < shard_count_; ++s) {
    keys.push_back(job.key_prefix + "shard-" + std::to_string(s));
  }
  for (int s = 0; s < shard_count_;) {
    bool reported = false;
    std::string value;
    // Returns when the key is set, throws when the wait's time passed first
    // (or the store failed: check() then throws too). Never a wait of 0 ms,
    // which c10d stores read as "no timeout".
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() > 0) {
      try {
        store_->wait({keys[s]}, std::min(kHeldWait, left));
      } catch (const std::exception&) {
      }
    }
    try {
      reported = store_->check({keys[s]});
      if (reported) value = Text(store_->get(keys[s]));
    } catch (const std::exception& e) {
      throw Unavailable("checkpoint " + job.dir.string() + ": the store failed: " + e.what());
    }
    if (reported) {
      if (value.rfind("ok ", 0) != 0) {
        throw Unavailable("checkpoint " + job.dir.string() + ": rank " + std::to_string(s) +
                          " failed to write its shard: " + value);
      }
      crcs[s++] = static_cast<uint32_t>(std::stoul(value.substr(3)));
      continue;
    }
    if (Clock::now() >= deadline) {
      throw DeadlineExceeded("checkpoint " + job.dir.string() + ": rank " + std::to_string(s) +
                             " did not report its shard within " +
                             std::to_string(options_.agreement_timeout.count()) +
                             " ms (did it die?)");
    }
    MutexLock lock(mu_);
    if (stop_) {
      throw Cancelled("checkpoint " + job.dir.string() +
                      ": shutting down before every rank reported its shard");
    }
  }
  try {
    for (const std::string& key : keys) store_->deleteKey(key);  // keeps the store small
  } catch (const std::exception& e) {
    spdlog::warn("checkpoint {}: removing its keys from the store: {}", job.dir.string(), e.what());
  }
  return crcs;
}

}  // namespace rlswarm::learner
