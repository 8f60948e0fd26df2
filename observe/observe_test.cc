// The observation side of a run that tools read: TensorBoard event files
// read back frame by frame, and the /metrics HTTP server over real sockets on
// 127.0.0.1.

#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>

#include "common/errors.h"
#include "common/testing/files.h"
#include "observe/metrics_http_server.h"
#include "observe/scalar_log.h"
#include "observe/tensorboard_writer.h"

namespace rlswarm::observe {
namespace {

namespace fs = std::filesystem;
namespace pb = google::protobuf;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

// ---------------------------------------------------------------------------
// TensorBoard event files.

std::uint64_t LittleEndian(const std::string& bytes, std::size_t offset, int size) {
  std::uint64_t value = 0;
  for (int i = size - 1; i >= 0; --i) {
    value = (value << 8) | static_cast<std::uint8_t>(bytes[offset + i]);
  }
  return value;
}

// Splits a TFRecord file into its records, checking both CRCs of every frame.
std::vector<std::string> ReadRecords(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> records;
  std::size_t offset = 0;
  while (offset < bytes.size()) {
    EXPECT_LE(offset + 12, bytes.size()) << "truncated header at " << offset;
    if (offset + 12 > bytes.size()) break;
    const std::uint64_t length = LittleEndian(bytes, offset, 8);
    EXPECT_EQ(LittleEndian(bytes, offset + 8, 4), MaskedCrc32c(bytes.substr(offset, 8)))
        << "length crc at " << offset;
    offset += 12;
    EXPECT_LE(offset + length + 4, bytes.size()) << "truncated record at " << offset;
    if (offset + length + 4 > bytes.size()) break;
    const std::string data = bytes.substr(offset, length);
    EXPECT_EQ(LittleEndian(bytes, offset + length, 4), MaskedCrc32c(data))
        << "data crc at " << offset;
    records.push_back(data);
    offset += length + 4;
  }
  return records;
}

std::vector<fs::path> EventFiles(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().starts_with("events.out.tfevents.")) {
      files.push_back(entry.path());
    }
  }
  return files;
}

TEST(MaskedCrc32cTest, MasksTheCastagnoliCrcAsTfRecordDoes) {
  const std::uint32_t crc = 0xE3069283u;  // CRC-32C("123456789")
  EXPECT_EQ(MaskedCrc32c("123456789"), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

// /dev/full fails every write with ENOSPC, as a full disk does: the log
// names that writer once, stops writing to it, and the other keeps every
// scalar.
TEST(ScalarLogTest, AWriterOnAFullDiskIsReportedOnceAndTheOthersKeepEverything) {
  const testing::TempDir temp("rlswarm_observe");
  const std::string good = temp.path() + "/scalars.jsonl";
  ScalarLog log;
  log.Add(OpenJsonlScalarWriter("/dev/full"));
  log.Add(OpenJsonlScalarWriter(good));
  for (int i = 0; i < 3; ++i) {
    log.Write("learner/loss", i, 0.5 * i);
    log.Flush();
  }
  const std::vector<std::string> failures = log.failures();
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures[0].find("/dev/full"), std::string::npos) << failures[0];
  const std::vector<Scalar> kept = ReadJsonlScalars(good);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[2].step, 2);
  EXPECT_DOUBLE_EQ(kept[2].value, 1.0);
}

TEST(TensorBoardWriterTest, WritesFramedEventsThatParseBack) {
  const testing::TempDir temp("rlswarm_observe");
  const fs::path dir(temp.path());
  const fs::path run = dir / "run";  // created by the writer
  auto writer = OpenTensorBoardWriter(run.string());
  const std::vector<Scalar> written = {{"eval/mean_return", 1000, 1.7e9, 21.5},
                                       {"learner/loss", 2000, 1.7e9 + 1, 0.0},
                                       {"learner/loss", 3000, 1.7e9 + 2, -0.125}};
  for (const Scalar& s : written) writer->Write(s);
  writer->Flush();

  const std::vector<fs::path> files = EventFiles(run);
  ASSERT_EQ(files.size(), 1u);
  const std::string name = files[0].filename().string();
  const std::string seconds = name.substr(std::strlen("events.out.tfevents."));
  EXPECT_GT(std::stoll(seconds.substr(0, seconds.find('.'))), 1'600'000'000);

  const std::vector<std::string> records = ReadRecords(files[0]);
  ASSERT_EQ(records.size(), written.size() + 1);
  const pb::Descriptor* event_type = TensorBoardEventDescriptor();
  ASSERT_NE(event_type, nullptr);
  EXPECT_EQ(event_type->full_name(), "tensorflow.Event");
  pb::DynamicMessageFactory factory;
  std::unique_ptr<pb::Message> event(factory.GetPrototype(event_type)->New());
  const pb::Reflection* r = event->GetReflection();
  const pb::FieldDescriptor* wall_time = event_type->FindFieldByNumber(1);
  const pb::FieldDescriptor* step = event_type->FindFieldByNumber(2);
  const pb::FieldDescriptor* file_version = event_type->FindFieldByNumber(3);
  const pb::FieldDescriptor* summary = event_type->FindFieldByNumber(5);
  ASSERT_TRUE(wall_time && step && file_version && summary);

  ASSERT_TRUE(event->ParseFromString(records[0]));
  EXPECT_EQ(r->GetString(*event, file_version), "brain.Event:2");
  EXPECT_GT(r->GetDouble(*event, wall_time), 1.6e9);

  const pb::FieldDescriptor* value_field = summary->message_type()->FindFieldByNumber(1);
  const pb::FieldDescriptor* tag = value_field->message_type()->FindFieldByNumber(1);
  const pb::FieldDescriptor* simple_value = value_field->message_type()->FindFieldByNumber(2);
  for (std::size_t i = 0; i < written.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(event->ParseFromString(records[i + 1]));
    EXPECT_EQ(r->GetDouble(*event, wall_time), written[i].wall_time);
    EXPECT_EQ(r->GetInt64(*event, step), written[i].step);
    ASSERT_TRUE(r->HasField(*event, summary));
    const pb::Message& s = r->GetMessage(*event, summary);
    ASSERT_EQ(s.GetReflection()->FieldSize(s, value_field), 1);
    const pb::Message& v = s.GetReflection()->GetRepeatedMessage(s, value_field, 0);
    EXPECT_EQ(v.GetReflection()->GetString(v, tag), written[i].tag);
    // Set even when 0: TensorBoard needs simple_value present to see a scalar.
    EXPECT_TRUE(v.GetReflection()->HasField(v, simple_value));
    EXPECT_EQ(v.GetReflection()->GetFloat(v, simple_value), static_cast<float>(written[i].value));
  }
}

// The bytes TensorFlow's generated code would write for
// Event{wall_time: 1.5, step: 2, summary {value {tag: "a" simple_value: 0}}},
// worked out by hand from the wire format, so a wrong field number or type
// in the run-time descriptor cannot go unnoticed.
TEST(TensorBoardWriterTest, EncodesTensorFlowsFieldNumbers) {
  const testing::TempDir temp("rlswarm_observe");
  const fs::path dir(temp.path());
  auto writer = OpenTensorBoardWriter(dir.string());
  writer->Write({"a", 2, 1.5, 0.0});
  writer->Flush();
  const std::vector<fs::path> files = EventFiles(dir);
  ASSERT_EQ(files.size(), 1u);
  const std::vector<std::string> records = ReadRecords(files[0]);
  ASSERT_EQ(records.size(), 2u);
  const std::string expected(
      "\x09\x00\x00\x00\x00\x00\x00\xf8\x3f"  // 1: double 1.5
      "\x10\x02"                              // 2: varint 2
      "\x2a\x0a"                              // 5: Summary, 10 bytes
      "\x0a\x08"                              //   1: Value, 8 bytes
      "\x0a\x01"                              //     1: tag "a"
      "a"
      "\x15\x00\x00\x00\x00",  //     2: float 0
      23);
  EXPECT_EQ(records[1], expected);
}

TEST(TensorBoardWriterTest, ThrowsUnavailableWhenTheDirectoryCannotBeCreated) {
  const testing::TempDir temp("rlswarm_observe");
  const fs::path dir(temp.path());
  const fs::path file = dir / "a_file";
  std::ofstream(file) << "x";
  EXPECT_THROW(OpenTensorBoardWriter((file / "run").string()), Unavailable);
}

// ---------------------------------------------------------------------------
// Prometheus text and the /metrics server.

TEST(PrometheusTextTest, GroupsSamplesUnderOneHelpAndType) {
  PrometheusText text;
  text.Gauge("rlswarm_replay_items", "Items in the replay table.", 12, {{"table", "main"}})
      .Counter("rlswarm_env_steps_total", "Env steps taken.", 1e6)
      .Gauge("rlswarm_replay_items", "ignored", 3.5, {{"table", "eval"}});
  EXPECT_EQ(text.Text(),
            "# HELP rlswarm_replay_items Items in the replay table.\n"
            "# TYPE rlswarm_replay_items gauge\n"
            "rlswarm_replay_items{table=\"main\"} 12\n"
            "rlswarm_replay_items{table=\"eval\"} 3.5\n"
            "# HELP rlswarm_env_steps_total Env steps taken.\n"
            "# TYPE rlswarm_env_steps_total counter\n"
            "rlswarm_env_steps_total 1000000\n");
  EXPECT_EQ(PrometheusText().Text(), "");
}

TEST(PrometheusTextTest, EscapesAndSpellsSpecialValues) {
  PrometheusText text;
  text.Gauge("a:b_c", "line\\one\nline two", std::numeric_limits<double>::quiet_NaN(),
             {{"path", "C:\\x \"q\"\n"}, {"_k2", ""}})
      .Gauge("a:b_c", "", std::numeric_limits<double>::infinity())
      .Gauge("a:b_c", "", -std::numeric_limits<double>::infinity(), {{"x", "1"}});
  EXPECT_EQ(text.Text(),
            "# HELP a:b_c line\\\\one\\nline two\n"
            "# TYPE a:b_c gauge\n"
            "a:b_c{path=\"C:\\\\x \\\"q\\\"\\n\",_k2=\"\"} NaN\n"
            "a:b_c +Inf\n"
            "a:b_c{x=\"1\"} -Inf\n");
}

TEST(PrometheusTextTest, RejectsInvalidNamesTypeClashesAndNegativeCounters) {
  PrometheusText text;
  for (const char* name : {"", "1abc", "a-b", "a b", "é"}) {
    EXPECT_THROW(text.Gauge(name, "", 1), InvalidArgument) << name;
  }
  EXPECT_THROW(text.Gauge("ok", "", 1, {{"a:b", "v"}}), InvalidArgument);
  EXPECT_THROW(text.Gauge("ok", "", 1, {{"__name__", "v"}}), InvalidArgument);
  EXPECT_THROW(text.Gauge("ok", "", 1, {{"9x", "v"}}), InvalidArgument);
  EXPECT_THROW(text.Gauge("ok", "", 1, {{"a", "1"}, {"a", "2"}}), InvalidArgument);
  EXPECT_THROW(text.Counter("steps_total", "", -1), InvalidArgument);
  text.Gauge("g", "", 1);
  EXPECT_THROW(text.Counter("g", "", 1), InvalidArgument);
  EXPECT_EQ(text.Text(), "# HELP g \n# TYPE g gauge\ng 1\n");
}

constexpr auto kClientTimeout = 10s;

struct HttpResult {
  int status = 0;
  std::string content_type;
  std::string allow;
  std::string body;
};

// One request on a fresh connection, with a deadline on every step.
HttpResult Request(int port, http::verb verb, const std::string& target) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  stream.expires_after(kClientTimeout);
  stream.connect(
      tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  http::request<http::empty_body> request{verb, target, 11};
  request.set(http::field::host, "127.0.0.1");
  request.keep_alive(false);
  http::response<http::string_body> response;
  beast::flat_buffer buffer;
  beast::error_code error;
  http::async_write(stream, request, [&](beast::error_code ec, std::size_t) {
    if (ec) {
      error = ec;
      return;
    }
    stream.expires_after(kClientTimeout);
    http::async_read(stream, buffer, response,
                     [&](beast::error_code read_ec, std::size_t) { error = read_ec; });
  });
  io.run();
  if (error) throw std::runtime_error("request failed: " + error.message());
  return {static_cast<int>(response.result_int()), std::string(response[http::field::content_type]),
          std::string(response[http::field::allow]), response.body()};
}

// A raw connection for clients that do not speak HTTP properly.
class RawClient {
 public:
  explicit RawClient(int port) : stream_(io_) {
    stream_.connect(
        tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  }

  // Errors are ignored: the server may close while a long write is in flight.
  void Send(const std::string& bytes) {
    beast::error_code ignored;
    asio::write(stream_.socket(), asio::buffer(bytes), ignored);
  }

  // Everything read so far.
  const std::string& received() const { return received_; }

  // Reads until the server closes the connection (true) or `timeout` passes.
  bool WaitForClose(std::chrono::steady_clock::duration timeout) {
    bool closed = false;
    std::array<char, 4096> chunk;
    std::function<void()> read = [&] {
      stream_.async_read_some(asio::buffer(chunk), [&](beast::error_code ec, std::size_t n) {
        received_.append(chunk.data(), n);
        if (ec == asio::error::eof || ec == asio::error::connection_reset) {
          closed = true;
        } else if (!ec) {
          read();
        }
      });
    };
    stream_.expires_after(timeout);
    read();
    io_.restart();
    io_.run();
    return closed;
  }

 private:
  asio::io_context io_;
  beast::tcp_stream stream_;
  std::string received_;
};

const std::function<std::string()> kRender = [] {
  return PrometheusText().Gauge("up", "The run is up.", 1).Text();
};

TEST(MetricsHttpServerTest, ServesMetricsOnAPickedPort) {
  MetricsHttpServer server("127.0.0.1", 0, kRender);
  ASSERT_GT(server.port(), 0);
  const HttpResult result = Request(server.port(), http::verb::get, "/metrics");
  EXPECT_EQ(result.status, 200);
  EXPECT_TRUE(result.content_type.starts_with("text/plain; version=0.0.4")) << result.content_type;
  EXPECT_EQ(result.body, "# HELP up The run is up.\n# TYPE up gauge\nup 1\n");
  EXPECT_EQ(Request(server.port(), http::verb::get, "/metrics?x=1").status, 200);
}

TEST(MetricsHttpServerTest, AnswersOtherPathsWith404AndOtherMethodsWith405) {
  MetricsHttpServer server("127.0.0.1", 0, kRender);
  EXPECT_EQ(Request(server.port(), http::verb::get, "/").status, 404);
  EXPECT_EQ(Request(server.port(), http::verb::get, "/metricsx").status, 404);
  const HttpResult post = Request(server.port(), http::verb::post, "/metrics");
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(post.allow, "GET");
}

TEST(MetricsHttpServerTest, ServesEveryRequestOfAKeptAliveConnection) {
  MetricsHttpServer server("127.0.0.1", 0, kRender);
  RawClient client(server.port());
  client.Send(
      "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /metrics HTTP/1.1\r\nHost: x\r\n"
      "Connection: close\r\n\r\n");
  EXPECT_TRUE(client.WaitForClose(kClientTimeout));  // after the second answer
  const std::string& received = client.received();
  const std::size_t first = received.find("HTTP/1.1 200 OK");
  ASSERT_NE(first, std::string::npos) << received;
  EXPECT_NE(received.find("HTTP/1.1 200 OK", first + 1), std::string::npos) << received;
}

TEST(MetricsHttpServerTest, ClosesAGarbageConnectionAndKeepsServing) {
  MetricsHttpServer server("127.0.0.1", 0, kRender);
  RawClient garbage(server.port());
  garbage.Send(std::string("\x00\xff\x13 not http at all\r\n\r\n", 22));
  EXPECT_TRUE(garbage.WaitForClose(kClientTimeout));

  RawClient oversized(server.port());
  oversized.Send("GET /metrics HTTP/1.1\r\nX: " + std::string(64 * 1024, 'a') + "\r\n\r\n");
  EXPECT_TRUE(oversized.WaitForClose(kClientTimeout));

  EXPECT_EQ(Request(server.port(), http::verb::get, "/metrics").status, 200);
}

TEST(MetricsHttpServerTest, ASilentClientDoesNotBlockAnother) {
  MetricsHttpServer server("127.0.0.1", 0, kRender);
  RawClient silent(server.port());
  RawClient half(server.port());
  half.Send("GET /metr");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Request(server.port(), http::verb::get, "/metrics").status, 200);
  // Well under the server's 5 s read timeout: nobody waited for the others.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  // And the silent one is dropped at the read timeout.
  EXPECT_TRUE(silent.WaitForClose(kClientTimeout));
}

TEST(MetricsHttpServerTest, AnswersA500WhenRenderThrowsAndKeepsServing) {
  int calls = 0;
  MetricsHttpServer server("127.0.0.1", 0, [&calls]() -> std::string {
    if (++calls == 1) throw Unavailable("replay not reachable");
    return "ok\n";
  });
  EXPECT_EQ(Request(server.port(), http::verb::get, "/metrics").status, 500);
  EXPECT_EQ(Request(server.port(), http::verb::get, "/metrics").body, "ok\n");
}

TEST(MetricsHttpServerTest, StopClosesOpenConnectionsAndIsIdempotent) {
  auto server = std::make_unique<MetricsHttpServer>("127.0.0.1", 0, kRender);
  const int port = server->port();
  RawClient idle(port);
  const auto start = std::chrono::steady_clock::now();
  server->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  EXPECT_TRUE(idle.WaitForClose(kClientTimeout));
  server->Stop();
  server.reset();
}

TEST(MetricsHttpServerTest, RejectsABadAddressAndABusyPort) {
  EXPECT_THROW(MetricsHttpServer("not an address", 0, kRender), InvalidArgument);
  EXPECT_THROW(MetricsHttpServer("127.0.0.1", 70000, kRender), InvalidArgument);
  EXPECT_THROW(MetricsHttpServer("127.0.0.1", 0, nullptr), InvalidArgument);
  MetricsHttpServer first("127.0.0.1", 0, kRender);
  EXPECT_THROW(MetricsHttpServer("127.0.0.1", first.port(), kRender), Unavailable);
}

}  // namespace
}  // namespace rlswarm::observe
