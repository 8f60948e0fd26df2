#pragma once

// Scalars as a TensorBoard event file, so `tensorboard --logdir <run dir>`
// shows a run's curves without TensorFlow in the build.
//
// The file is a sequence of TFRecords (TensorFlow's
// core/lib/io/record_writer.cc):
//   uint64 length (little-endian), uint32 masked crc32c(length bytes),
//   length bytes of data,          uint32 masked crc32c(data)
// where each record holds one serialized tensorflow.Event
// (core/util/event.proto): the first carries file_version "brain.Event:2",
// every later one a Summary with one simple_value. The message types are
// built at run time from a descriptor with TensorFlow's field numbers and
// serialized by libprotobuf (no protoc, no generated code).
//
// Thread-safety: the writer is not thread-safe (a ScalarLog serialises its
// writers); the free functions are.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "observe/scalar_log.h"

namespace google::protobuf {
class Descriptor;
}  // namespace google::protobuf

namespace rlswarm::observe {

// Creates `dir` if needed and opens
// `dir/events.out.tfevents.<unix seconds>.<hostname>` for appending (two
// writers opened in the same second on one host share a name; TensorBoard
// still reads the file, but open one writer per run directory). Writes the
// file_version record at once. Throws Unavailable when the directory or file
// cannot be created. Write() buffers; Flush() makes the records readable by
// TensorBoard and throws Unavailable if the file could not be written.
std::unique_ptr<ScalarWriter> OpenTensorBoardWriter(const std::string& dir);

// TFRecord's masked CRC-32C (common/crc32c.h): ((crc >> 15) | (crc << 17)) + 0xa282ead8.
std::uint32_t MaskedCrc32c(std::string_view data);

// The run-time descriptor of tensorflow.Event (its pool lives for the whole
// process), for readers of the files this writer produces and for tests.
const google::protobuf::Descriptor* TensorBoardEventDescriptor();

}  // namespace rlswarm::observe
