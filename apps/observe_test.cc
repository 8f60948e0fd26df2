// The observation side of a run: TensorBoard event files read back frame by
// frame.

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

#include "apps/tensorboard_writer.h"
#include "common/errors.h"

namespace rlswarm::apps {
namespace {

namespace fs = std::filesystem;
namespace pb = google::protobuf;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() / ("rlswarm_observe_" + std::to_string(::getpid()) + "_" +
                                         info->test_suite_name() + "_" + info->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

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

TEST(Crc32cTest, MatchesTheCastagnoliCheckValue) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
  const std::uint32_t crc = 0xE3069283u;
  EXPECT_EQ(MaskedCrc32c("123456789"), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

TEST(TensorBoardWriterTest, WritesFramedEventsThatParseBack) {
  TempDir dir;
  const fs::path run = dir.path() / "run";  // created by the writer
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
  TempDir dir;
  auto writer = OpenTensorBoardWriter(dir.path().string());
  writer->Write({"a", 2, 1.5, 0.0});
  writer->Flush();
  const std::vector<fs::path> files = EventFiles(dir.path());
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
  TempDir dir;
  const fs::path file = dir.path() / "a_file";
  std::ofstream(file) << "x";
  EXPECT_THROW(OpenTensorBoardWriter((file / "run").string()), Unavailable);
}

}  // namespace
}  // namespace rlswarm::apps
