// Shared helpers of the libFuzzer targets (fuzz/README.md): one input is
// tried as binary protobuf and as text format, with a parser that keeps its
// errors to itself (a fuzzer feeds mostly broken text). Header-only; each
// target is single-threaded.
#pragma once

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/text_format.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace ofl::fuzz {

class SilentErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
};

// libprotobuf logs every invalid UTF-8 string it parses; a fuzzer makes
// millions. Installed once per target by the static below.
inline bool QuietProtobuf() {
  google::protobuf::SetLogHandler(nullptr);
  return true;
}
inline const bool kQuietProtobuf = QuietProtobuf();

// Calls check(message) once for the bytes parsed as binary protobuf and once
// for them parsed as text format, each time only when that parse succeeds.
template <typename Message, typename Check>
void ForEachParse(const uint8_t* data, size_t size, const Check& check) {
  Message binary;
  if (binary.ParseFromArray(data, static_cast<int>(size))) check(binary);
  Message text;
  google::protobuf::TextFormat::Parser parser;
  SilentErrors errors;
  parser.RecordErrorsTo(&errors);
  if (parser.ParseFromString(std::string(reinterpret_cast<const char*>(data), size), &text)) {
    check(text);
  }
}

}  // namespace ofl::fuzz
