#include "observe/tensorboard_writer.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <span>
#include <system_error>

#include "common/crc32c.h"
#include "common/errors.h"

namespace rlswarm::observe {
namespace {

namespace pb = google::protobuf;

// tensorflow/core/framework/summary.proto and core/util/event.proto, cut down
// to the fields a scalar needs, with TensorFlow's names and field numbers.
// The oneofs matter: in proto3 a plain float 0.0 would not be serialized, but
// a oneof member is, and TensorBoard looks for simple_value being set.
pb::FileDescriptorProto EventFileProto() {
  using Field = pb::FieldDescriptorProto;
  pb::FileDescriptorProto file;
  file.set_name("rlswarm/tensorboard_event.proto");
  file.set_package("tensorflow");
  file.set_syntax("proto3");
  auto add_field = [](pb::DescriptorProto* message, const char* name, int number, Field::Type type,
                      Field::Label label = Field::LABEL_OPTIONAL) {
    Field* field = message->add_field();
    field->set_name(name);
    field->set_number(number);
    field->set_type(type);
    field->set_label(label);
    return field;
  };

  pb::DescriptorProto* summary = file.add_message_type();
  summary->set_name("Summary");
  pb::DescriptorProto* value = summary->add_nested_type();
  value->set_name("Value");
  value->add_oneof_decl()->set_name("value");
  add_field(value, "tag", 1, Field::TYPE_STRING);
  add_field(value, "simple_value", 2, Field::TYPE_FLOAT)->set_oneof_index(0);
  add_field(summary, "value", 1, Field::TYPE_MESSAGE, Field::LABEL_REPEATED)
      ->set_type_name(".tensorflow.Summary.Value");

  pb::DescriptorProto* event = file.add_message_type();
  event->set_name("Event");
  event->add_oneof_decl()->set_name("what");
  add_field(event, "wall_time", 1, Field::TYPE_DOUBLE);
  add_field(event, "step", 2, Field::TYPE_INT64);
  add_field(event, "file_version", 3, Field::TYPE_STRING)->set_oneof_index(0);
  Field* summary_field = add_field(event, "summary", 5, Field::TYPE_MESSAGE);
  summary_field->set_type_name(".tensorflow.Summary");
  summary_field->set_oneof_index(0);
  return file;
}

// The pool and the factory live for the whole process; both are thread-safe
// for the lookups and GetPrototype() calls made after construction.
struct EventTypes {
  EventTypes() {
    const pb::FileDescriptor* file = pool.BuildFile(EventFileProto());
    if (file == nullptr) throw Internal("cannot build the tensorflow.Event descriptor");
    event = file->FindMessageTypeByName("Event");
    event_prototype = factory.GetPrototype(event);
  }
  pb::DescriptorPool pool;
  pb::DynamicMessageFactory factory{&pool};
  const pb::Descriptor* event = nullptr;
  const pb::Message* event_prototype = nullptr;
};

EventTypes& Types() {
  static EventTypes* types = new EventTypes();  // never destroyed: used at exit
  return *types;
}

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string HostName() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0 || name[0] == '\0') return "localhost";
  return name.data();
}

void AppendLittleEndian(std::string* out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

class TensorBoardWriter final : public ScalarWriter {
 public:
  explicit TensorBoardWriter(const std::string& dir) {
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (error) throw Unavailable("cannot create " + dir + ": " + error.message());
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
    path_ = (std::filesystem::path(dir) /
             ("events.out.tfevents." + std::to_string(seconds) + "." + HostName()))
                .string();
    out_.open(path_, std::ios::binary | std::ios::app);
    if (!out_) throw Unavailable("cannot open " + path_ + " for appending");

    const EventTypes& types = Types();
    event_.reset(types.event_prototype->New());
    const pb::Descriptor* d = types.event;
    wall_time_ = d->FindFieldByName("wall_time");
    step_ = d->FindFieldByName("step");
    file_version_ = d->FindFieldByName("file_version");
    summary_ = d->FindFieldByName("summary");
    const pb::Descriptor* summary = summary_->message_type();
    value_ = summary->FindFieldByName("value");
    tag_ = value_->message_type()->FindFieldByName("tag");
    simple_value_ = value_->message_type()->FindFieldByName("simple_value");

    const pb::Reflection* r = event_->GetReflection();
    r->SetDouble(event_.get(), wall_time_, NowSeconds());
    r->SetString(event_.get(), file_version_, "brain.Event:2");
    WriteEvent();
    Flush();
  }

  void Write(const Scalar& scalar) override {
    const pb::Reflection* r = event_->GetReflection();
    event_->Clear();
    r->SetDouble(event_.get(), wall_time_, scalar.wall_time);
    r->SetInt64(event_.get(), step_, scalar.step);
    pb::Message* summary = r->MutableMessage(event_.get(), summary_, &Types().factory);
    pb::Message* value = summary->GetReflection()->AddMessage(summary, value_, &Types().factory);
    value->GetReflection()->SetString(value, tag_, scalar.tag);
    value->GetReflection()->SetFloat(value, simple_value_, static_cast<float>(scalar.value));
    WriteEvent();
  }

  void Flush() override {
    out_.flush();
    if (!out_) throw Unavailable("cannot write " + path_);
  }

 private:
  // One TFRecord frame around the serialized event_.
  void WriteEvent() {
    const std::string data = event_->SerializeAsString();
    std::string frame;
    frame.reserve(data.size() + 16);
    AppendLittleEndian(&frame, data.size(), 8);
    AppendLittleEndian(&frame, MaskedCrc32c(frame), 4);
    frame += data;
    AppendLittleEndian(&frame, MaskedCrc32c(data), 4);
    out_.write(frame.data(), static_cast<std::streamsize>(frame.size()));
  }

  std::string path_;
  std::ofstream out_;
  std::unique_ptr<pb::Message> event_;  // reused for every record
  const pb::FieldDescriptor* wall_time_ = nullptr;
  const pb::FieldDescriptor* step_ = nullptr;
  const pb::FieldDescriptor* file_version_ = nullptr;
  const pb::FieldDescriptor* summary_ = nullptr;
  const pb::FieldDescriptor* value_ = nullptr;
  const pb::FieldDescriptor* tag_ = nullptr;
  const pb::FieldDescriptor* simple_value_ = nullptr;
};

}  // namespace

std::unique_ptr<ScalarWriter> OpenTensorBoardWriter(const std::string& dir) {
  return std::make_unique<TensorBoardWriter>(dir);
}

std::uint32_t MaskedCrc32c(std::string_view data) {
  const std::uint32_t crc = Crc32c(std::as_bytes(std::span(data.data(), data.size())));
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

const google::protobuf::Descriptor* TensorBoardEventDescriptor() { return Types().event; }

}  // namespace rlswarm::observe
