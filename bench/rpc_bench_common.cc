// rpc_bench: measurement helpers, the control pipe, CURVE keys.

#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "bench/rpc_bench.h"
#include "rpc/client.h"

namespace rlswarm::bench {

double MedianUs(std::vector<double> us) {
  if (us.empty()) return 0;
  const auto mid = us.begin() + static_cast<std::ptrdiff_t>(us.size() / 2);
  std::nth_element(us.begin(), mid, us.end());
  return *mid;
}

void Sample::Merge(Sample other) {
  done += other.done;
  seconds += other.seconds;
  cpu_seconds += other.cpu_seconds;
  latencies_us.insert(latencies_us.end(), other.latencies_us.begin(), other.latencies_us.end());
}

Measurement Sample::Summary() const {
  if (done <= 0 || seconds <= 0) throw rlswarm::Internal("no call completed while measuring");
  return {static_cast<double>(done) / seconds, MedianUs(latencies_us),
          cpu_seconds * 1e6 / static_cast<double>(done)};
}

bool PinToCpu(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return ::sched_setaffinity(0, sizeof(set), &set) == 0;
}

double FirstTouchGBPerSec() {
  constexpr std::size_t kBytes = 32 << 20;
  const auto start = Clock::now();
  void* p = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 0;
  auto* bytes = static_cast<volatile char*>(p);
  for (std::size_t i = 0; i < kBytes; i += 4096) bytes[i] = 1;
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ::munmap(p, kBytes);
  return kBytes / seconds / 1e9;
}

void WriteLine(int fd, const std::string& line) {
  const std::string text = line + "\n";
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) throw rlswarm::Unavailable("control pipe closed");
    done += static_cast<std::size_t>(n);
  }
}

std::optional<std::string> ReadLine(int fd) {
  std::string line;
  char c;
  while (true) {
    const ssize_t n = ::read(fd, &c, 1);
    if (n <= 0) return std::nullopt;
    if (c == '\n') return line;
    line += c;
  }
}

std::vector<std::string> Split(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

namespace {
void NoFree(void*, void*) {}
}  // namespace

zmq::message_t ZeroCopy(const std::vector<std::byte>& bytes) {
  return zmq::message_t(const_cast<std::byte*>(bytes.data()), bytes.size(), &NoFree, nullptr);
}

void ConfigureRawSocket(zmq::socket_t& s) {
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::maxmsgsize, std::int64_t{-1});
  s.set(zmq::sockopt::rcvtimeo, static_cast<int>(kPollInterval.count()));
}

void EnableRpcHeartbeats(zmq::socket_t& s) {
  // The client's and the server's defaults are the same.
  const rpc::ClientOptions defaults;
  s.set(zmq::sockopt::heartbeat_ivl, static_cast<int>(defaults.heartbeat_interval.count()));
  s.set(zmq::sockopt::heartbeat_timeout, static_cast<int>(defaults.heartbeat_timeout.count()));
  s.set(zmq::sockopt::heartbeat_ttl, static_cast<int>(defaults.heartbeat_timeout.count()));
}

zmq::socket_t BindAcks(zmq::context_t& ctx, std::string* endpoint) {
  zmq::socket_t acks(ctx, zmq::socket_type::pull);
  ConfigureRawSocket(acks);
  acks.bind("tcp://127.0.0.1:*");
  *endpoint = acks.get(zmq::sockopt::last_endpoint);
  return acks;
}

CurveKeys MakeCurveKeys() {
  CurveKeys k;
  std::string tmpl = (std::filesystem::temp_directory_path() / "rpc_bench_keys.XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw rlswarm::Unavailable("mkdtemp failed");
  k.dir = tmpl;
  k.server = rpc::GenerateKeyPair();
  k.client = rpc::GenerateKeyPair();
  rpc::WriteKeyPair(k.dir + "/server", k.server);
  rpc::WriteKeyPair(k.dir + "/client", k.client);
  std::filesystem::create_directory(k.dir + "/clients");
  std::filesystem::copy_file(k.dir + "/client.key", k.dir + "/clients/client.key");
  return k;
}

CurveKeys ReadCurveKeys(const std::string& dir) {
  CurveKeys k;
  k.dir = dir;
  k.server = rpc::ReadKeyFile(dir + "/server.key_secret");
  k.client = rpc::ReadKeyFile(dir + "/client.key_secret");
  return k;
}

}  // namespace rlswarm::bench
