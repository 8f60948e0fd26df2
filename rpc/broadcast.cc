#include "rpc/broadcast.h"

#include <spdlog/spdlog.h>

#include <cstring>
#include <deque>
#include <thread>
#include <zmq.hpp>

#include "common/errors.h"
#include "common/thread_annotations.h"
#include "rpc/client.h"
#include "rpc/internal/context.h"
#include "rpc/internal/frames.h"
#include "rpc/internal/zmq_security.h"
#include "rpc/server.h"
#include "rpc/wire.h"

namespace rlswarm::rpc {
namespace {

constexpr char kVersionMethod[] = "broadcast";
constexpr char kBeaconMethod[] = "beacon";
constexpr char kSnapshotMethod[] = "snapshot";
constexpr std::size_t kAlignment = 8;  // every dtype's alignment

std::size_t AlignUp(std::size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

using PackedBuffer = std::shared_ptr<std::vector<std::byte>>;

// Keeps the buffer of a sent version for the next one. Packing a large blob
// into freshly allocated memory pays a page fault per 4 KiB on first touch
// (~0.2 GB/s on this project's VMs, i.e. 0.25 s for 50 MB); copying into
// pages already mapped runs at memcpy speed. A buffer comes back here when
// its last reference drops, usually on a ZeroMQ I/O thread once every
// subscriber's copy is sent; the mutex orders that thread's last read
// before the next write. Holds at most one spare. Thread-safe.
class PackBufferPool : public std::enable_shared_from_this<PackBufferPool> {
 public:
  // A buffer of `size` bytes (contents unspecified), returned to this pool
  // when its last reference drops.
  PackedBuffer Get(std::size_t size) {
    std::unique_ptr<std::vector<std::byte>> buffer;
    {
      MutexLock lock(mutex_);
      buffer = std::move(spare_);
    }
    // A spare far larger than needed is let go rather than pinned.
    if (!buffer || buffer->capacity() / 2 > size) {
      buffer = std::make_unique<std::vector<std::byte>>();
    }
    buffer->resize(size);
    std::weak_ptr<PackBufferPool> pool = weak_from_this();
    return PackedBuffer(buffer.release(), [pool](std::vector<std::byte>* returned) {
      std::unique_ptr<std::vector<std::byte>> owned(returned);
      if (auto alive = pool.lock()) alive->Return(std::move(owned));
      // else (or if a spare is already kept) `owned` is freed here
    });
  }

 private:
  void Return(std::unique_ptr<std::vector<std::byte>>&& buffer) {
    std::unique_ptr<std::vector<std::byte>> extra;
    {
      MutexLock lock(mutex_);
      if (!spare_) {
        spare_ = std::move(buffer);
      } else {
        extra = std::move(buffer);
      }
    }
    // `extra` is freed here, outside the lock.
  }

  Mutex mutex_;
  std::unique_ptr<std::vector<std::byte>> spare_ RLSWARM_GUARDED_BY(mutex_);
};

// Packs [u32 header length][header][pad][payload 0][pad][payload 1]... into
// one buffer (from `pool`, if given), shared by every subscriber's queue.
PackedBuffer PackMessage(const char* method, std::uint64_t version,
                         const std::vector<Payload>& payloads, PackBufferPool* pool = nullptr) {
  Header header;
  header.method = method;
  header.request_id = version;
  header.payloads = internal::Describe(payloads);
  const std::string encoded = EncodeHeader(header);
  std::size_t size = AlignUp(sizeof(std::uint32_t) + encoded.size());
  for (const Payload& p : payloads) size = AlignUp(size + p.bytes().size());
  PackedBuffer buffer =
      pool != nullptr ? pool->Get(size) : std::make_shared<std::vector<std::byte>>(size);
  const auto header_length = static_cast<std::uint32_t>(encoded.size());
  std::byte* out = buffer->data();
  std::memcpy(out, &header_length, sizeof(header_length));
  std::memcpy(out + sizeof(header_length), encoded.data(), encoded.size());
  std::size_t end = sizeof(header_length) + encoded.size();
  // Padding is zeroed: a reused buffer must not resend old bytes.
  std::size_t offset = AlignUp(end);
  std::memset(out + end, 0, offset - end);
  for (const Payload& p : payloads) {
    if (!p.bytes().empty()) std::memcpy(out + offset, p.bytes().data(), p.bytes().size());
    end = offset + p.bytes().size();
    offset = AlignUp(end);
    std::memset(out + end, 0, offset - end);
  }
  return buffer;
}

// Unpacks a message of PackMessage's format, trusting nothing: every length
// is checked against the frame before it is used. Payloads view the frame.
VersionedBlob UnpackMessage(zmq::message_t frame, Header& header) {
  const std::size_t size = frame.size();
  std::uint32_t header_length = 0;
  if (size < sizeof(header_length)) throw InvalidArgument("broadcast message too short");
  std::memcpy(&header_length, frame.data(), sizeof(header_length));
  if (header_length > size - sizeof(header_length)) {
    throw InvalidArgument("broadcast header length exceeds the message");
  }
  header = DecodeHeader(
      {static_cast<const std::byte*>(frame.data()) + sizeof(header_length), header_length});
  std::size_t offset = AlignUp(sizeof(header_length) + header_length);
  std::vector<std::pair<std::size_t, std::size_t>> spans;  // offset, bytes
  for (const PayloadDescriptor& d : header.payloads) {
    const std::uint64_t bytes = PayloadBytes(d);
    if (offset > size || bytes > size - offset) {
      throw InvalidArgument("broadcast payloads exceed the message");
    }
    spans.emplace_back(offset, bytes);
    offset = AlignUp(offset + bytes);
  }
  if (offset != AlignUp(size)) throw InvalidArgument("broadcast message has trailing bytes");

  auto message = std::make_shared<zmq::message_t>(std::move(frame));
  const auto* base = static_cast<const std::byte*>(message->data());
  const bool aligned = reinterpret_cast<std::uintptr_t>(base) % kAlignment == 0;
  VersionedBlob blob;
  blob.version = header.request_id;
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const auto& d = header.payloads[i];
    const std::byte* data = base + spans[i].first;
    blob.payloads.push_back(aligned
                                ? Payload::Adopt(d.dtype, d.shape, message, data, spans[i].second)
                                : Payload::Copy(d.dtype, d.shape, data, spans[i].second));
  }
  return blob;
}

// The packed buffer as one zero-copy frame (internal::PayloadFrame keeps the
// buffer alive until ZeroMQ has sent it to every subscriber).
zmq::message_t SharedFrame(const std::shared_ptr<std::vector<std::byte>>& buffer) {
  const auto size = static_cast<std::int64_t>(buffer->size());
  return internal::PayloadFrame(
      Payload::Adopt(DType::kUInt8, {size}, buffer, buffer->data(), buffer->size()));
}

// The snapshot reply: payload 0 is the version (int64 scalar), the rest the blob.
Payload VersionPayload(std::uint64_t version) {
  const auto v = static_cast<std::int64_t>(version);
  return Payload::Copy(DType::kInt64, {}, &v, sizeof(v));
}

}  // namespace

class Publisher::Impl {
 public:
  explicit Impl(PublisherOptions options)
      : options_(std::move(options)), socket_(internal::ProcessContext(), zmq::socket_type::pub) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.set(zmq::sockopt::sndhwm, options_.send_high_water_mark);
    zap_domain_ = internal::ConfigureCurveServer(socket_, options_.security);
    try {
      socket_.bind(options_.endpoint);
    } catch (const zmq::error_t& e) {
      throw Unavailable(options_.name + ": cannot bind " + options_.endpoint + ": " + e.what());
    }
    endpoint_ = socket_.get(zmq::sockopt::last_endpoint);

    ServerOptions server_options;
    server_options.endpoint = options_.snapshot_endpoint;
    server_options.num_workers = 1;
    server_options.security = options_.security;
    server_options.name = options_.name + "-snapshot";
    snapshot_server_ = std::make_unique<Server>(server_options);
    snapshot_server_->Register(kSnapshotMethod, [this](Request, Responder responder) {
      std::vector<Payload> reply;
      {
        MutexLock lock(mutex_);
        reply.reserve(current_.payloads.size() + 1);
        reply.push_back(VersionPayload(current_.version));
        reply.insert(reply.end(), current_.payloads.begin(), current_.payloads.end());
      }
      responder.Reply(std::move(reply));
    });
    snapshot_server_->Start();
    if (options_.beacon_interval.count() > 0) beacon_thread_ = std::thread([this] { Beacon(); });
  }

  ~Impl() {
    {
      MutexLock lock(mutex_);
      stopping_ = true;
    }
    stop_.NotifyAll();
    if (beacon_thread_.joinable()) beacon_thread_.join();
    snapshot_server_->Stop();
    socket_.close();
  }

  void Publish(std::uint64_t version, std::vector<Payload> payloads) {
    {
      MutexLock lock(mutex_);
      CheckNewer(version);
    }
    // Pack outside the lock: the copy of a large blob must not hold up
    // snapshots or beacons.
    auto packed = PackMessage(kVersionMethod, version, payloads, pack_pool_.get());
    MutexLock lock(mutex_);
    CheckNewer(version);  // a concurrent Publish may have won meanwhile
    // PUB never blocks: at a subscriber's high-water mark the message is
    // dropped for that subscriber only.
    (void)socket_.send(SharedFrame(packed), zmq::send_flags::dontwait);
    current_.version = version;
    current_.payloads = std::move(payloads);
  }

  std::string endpoint() const { return endpoint_; }
  std::string snapshot_endpoint() const { return snapshot_server_->endpoint(); }
  std::uint64_t version() const {
    MutexLock lock(mutex_);
    return current_.version;
  }

 private:
  void CheckNewer(std::uint64_t version) const RLSWARM_REQUIRES(mutex_) {
    if (version <= current_.version) {
      throw InvalidArgument(options_.name + ": version " + std::to_string(version) +
                            " is not newer than " + std::to_string(current_.version));
    }
  }

  void Beacon() {
    MutexLock lock(mutex_);
    while (!stop_.WaitFor(lock, options_.beacon_interval,
                          [this]() RLSWARM_REQUIRES(mutex_) { return stopping_; })) {
      if (current_.version == 0) continue;
      auto beacon = PackMessage(kBeaconMethod, current_.version, {});
      (void)socket_.send(zmq::buffer(beacon->data(), beacon->size()), zmq::send_flags::dontwait);
    }
  }

  PublisherOptions options_;
  // The PUB socket is used only under mutex_ (Publish and the beacon thread):
  // one user at a time, with the full memory barrier ZeroMQ asks for.
  mutable Mutex mutex_;
  CondVar stop_;
  bool stopping_ RLSWARM_GUARDED_BY(mutex_) = false;
  zmq::socket_t socket_ RLSWARM_GUARDED_BY(mutex_);
  std::unique_ptr<internal::ZapDomain> zap_domain_;
  std::string endpoint_;
  VersionedBlob current_ RLSWARM_GUARDED_BY(mutex_);
  // Shared with the buffers it hands out, which may outlive the publisher.
  const std::shared_ptr<PackBufferPool> pack_pool_ = std::make_shared<PackBufferPool>();
  std::unique_ptr<Server> snapshot_server_;
  std::thread beacon_thread_;
};

Publisher::Publisher(PublisherOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
Publisher::~Publisher() = default;
void Publisher::Publish(std::uint64_t version, std::vector<Payload> payloads) {
  impl_->Publish(version, std::move(payloads));
}
std::string Publisher::endpoint() const { return impl_->endpoint(); }
std::string Publisher::snapshot_endpoint() const { return impl_->snapshot_endpoint(); }
std::uint64_t Publisher::version() const { return impl_->version(); }

class Subscriber::Impl {
 public:
  explicit Impl(SubscriberOptions options) : options_(std::move(options)) {
    if (options_.endpoint.empty() || options_.snapshot_endpoint.empty()) {
      throw InvalidArgument(options_.name + ": endpoint and snapshot_endpoint are required");
    }
    if (options_.keep_versions < 1) throw InvalidArgument(options_.name + ": keep_versions < 1");
    control_address_ = internal::UniqueInprocEndpoint("subscriber-control");
    control_ = zmq::socket_t(internal::ProcessContext(), zmq::socket_type::pair);
    control_.set(zmq::sockopt::linger, 0);
    control_.bind(control_address_);

    ClientOptions client_options;
    client_options.endpoint = options_.snapshot_endpoint;
    client_options.security = options_.security;
    client_options.max_message_bytes = options_.max_message_bytes;
    client_options.name = options_.name + "-snapshot";
    snapshot_client_ = std::make_unique<Client>(client_options);
    thread_ = std::thread([this] { Run(); });
  }

  ~Impl() {
    (void)control_.send(zmq::str_buffer("stop"), zmq::send_flags::none);
    thread_.join();
    snapshot_client_->Close();
    control_.close();
  }

  std::optional<VersionedBlob> Latest() const {
    MutexLock lock(mutex_);
    if (latest_.version == 0) return std::nullopt;
    return latest_;
  }

  std::optional<VersionedBlob> WaitNewer(std::uint64_t after,
                                         std::chrono::milliseconds timeout) const {
    MutexLock lock(mutex_);
    if (!changed_.WaitFor(lock, timeout,
                          [&]() RLSWARM_REQUIRES(mutex_) { return latest_.version > after; })) {
      return std::nullopt;
    }
    return latest_;
  }

  std::uint64_t version() const {
    MutexLock lock(mutex_);
    return latest_.version;
  }

  std::vector<VersionedBlob> Recent() const {
    MutexLock lock(mutex_);
    std::vector<VersionedBlob> recent(earlier_.begin(), earlier_.end());
    if (latest_.version != 0) recent.push_back(latest_);
    return recent;
  }

 private:
  using Clock = std::chrono::steady_clock;

  // Receive thread: owns the SUB socket and its end of the control pair.
  void Run() {
    zmq::socket_t stop(internal::ProcessContext(), zmq::socket_type::pair);
    stop.set(zmq::sockopt::linger, 0);
    stop.connect(control_address_);
    zmq::socket_t sub(internal::ProcessContext(), zmq::socket_type::sub);
    sub.set(zmq::sockopt::linger, 0);
    sub.set(zmq::sockopt::rcvhwm, options_.receive_high_water_mark);
    sub.set(zmq::sockopt::maxmsgsize, options_.max_message_bytes);
    try {
      internal::ConfigureCurveClient(sub, options_.security);
      sub.set(zmq::sockopt::subscribe, "");
      sub.connect(options_.endpoint);
    } catch (const std::exception& e) {
      spdlog::error("{}: cannot subscribe to {}: {}", options_.name, options_.endpoint, e.what());
      return;
    }
    // Clone pattern: subscribe first, then ask for the snapshot, so nothing
    // published in between is missed (older updates are ignored by version).
    std::future<Reply> snapshot = RequestSnapshot();
    auto retry_at = Clock::time_point::max();
    std::vector<zmq_pollitem_t> items = {{stop.handle(), 0, ZMQ_POLLIN, 0},
                                         {sub.handle(), 0, ZMQ_POLLIN, 0}};
    while (true) {
      // While a snapshot is pending or due, wake periodically to check it.
      const bool snapshot_work = snapshot.valid() || retry_at != Clock::time_point::max();
      internal::Poll(items, std::chrono::milliseconds(snapshot_work ? 10 : -1));
      if (items[0].revents & ZMQ_POLLIN) break;
      if (items[1].revents & ZMQ_POLLIN) DrainUpdates(sub);
      const auto now = Clock::now();
      if (snapshot.valid() &&
          snapshot.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        if (!ApplySnapshot(snapshot)) retry_at = now + std::chrono::milliseconds(200);
      }
      const bool behind = newest_announced_ > version();
      if (!snapshot.valid() &&
          (now >= retry_at || (behind && retry_at == Clock::time_point::max()))) {
        retry_at = Clock::time_point::max();
        if (version() == 0 || behind) snapshot = RequestSnapshot();
      }
    }
    sub.close();
    stop.close();
  }

  std::future<Reply> RequestSnapshot() {
    CallOptions call;
    call.timeout = options_.snapshot_timeout;
    call.idempotent = true;
    return snapshot_client_->Call(kSnapshotMethod, {}, call);
  }

  // Applies a finished snapshot call; false if it failed (the publisher may
  // not be up yet) and should be retried.
  bool ApplySnapshot(std::future<Reply>& snapshot) {
    try {
      Reply reply = snapshot.get();
      if (reply.payloads.empty() || reply.payloads[0].dtype() != DType::kInt64 ||
          reply.payloads[0].NumElements() != 1) {
        throw InvalidArgument("malformed snapshot reply");
      }
      const auto version = static_cast<std::uint64_t>(reply.payloads[0].As<std::int64_t>()[0]);
      reply.payloads.erase(reply.payloads.begin());
      Offer(version, std::move(reply.payloads));
      return true;
    } catch (const std::exception& e) {
      spdlog::warn("{}: snapshot from {} failed ({}); retrying", options_.name,
                   options_.snapshot_endpoint, e.what());
      return false;
    }
  }

  // Reads every queued message and keeps the newest version.
  void DrainUpdates(zmq::socket_t& sub) {
    internal::ReceivedMessage message;
    while (internal::ReceiveMessage(sub, 1, message)) {
      try {
        if (message.too_many_frames || message.frames.size() != 1) {
          throw InvalidArgument("broadcast messages have one frame");
        }
        Header header;
        VersionedBlob blob = UnpackMessage(std::move(message.frames[0]), header);
        if (header.method == kBeaconMethod) {
          newest_announced_ = std::max(newest_announced_, blob.version);
        } else if (header.method == kVersionMethod) {
          newest_announced_ = std::max(newest_announced_, blob.version);
          Offer(blob.version, std::move(blob.payloads));
        } else {
          throw InvalidArgument("unknown broadcast method '" + header.method + "'");
        }
      } catch (const std::exception& e) {
        spdlog::warn("{}: dropped a malformed broadcast message: {}", options_.name, e.what());
      }
      message = {};
    }
  }

  void Offer(std::uint64_t version, std::vector<Payload> payloads) {
    {
      MutexLock lock(mutex_);
      if (version <= latest_.version) return;
      if (options_.keep_versions > 1 && latest_.version != 0) {
        earlier_.push_back(std::move(latest_));
        while (static_cast<int>(earlier_.size()) >= options_.keep_versions) earlier_.pop_front();
      }
      latest_.version = version;
      latest_.payloads = std::move(payloads);
    }
    changed_.NotifyAll();
  }

  SubscriberOptions options_;
  std::string control_address_;
  zmq::socket_t control_;
  std::unique_ptr<Client> snapshot_client_;
  std::uint64_t newest_announced_ = 0;  // receive thread only
  mutable Mutex mutex_;
  mutable CondVar changed_;
  VersionedBlob latest_ RLSWARM_GUARDED_BY(mutex_);
  std::deque<VersionedBlob> earlier_ RLSWARM_GUARDED_BY(mutex_);  // keep_versions - 1 at most
  std::thread thread_;
};

Subscriber::Subscriber(SubscriberOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
Subscriber::~Subscriber() = default;
std::optional<VersionedBlob> Subscriber::Latest() const { return impl_->Latest(); }
std::optional<VersionedBlob> Subscriber::WaitNewer(std::uint64_t after,
                                                   std::chrono::milliseconds timeout) const {
  return impl_->WaitNewer(after, timeout);
}
std::vector<VersionedBlob> Subscriber::Recent() const { return impl_->Recent(); }

std::uint64_t Subscriber::version() const { return impl_->version(); }

}  // namespace rlswarm::rpc
