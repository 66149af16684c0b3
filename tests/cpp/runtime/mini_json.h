// mini_json::Parser: a strict, small JSON parser for the trace test (RFC
// 8259 values: objects, arrays, strings with escapes, numbers, true, false,
// null; no trailing commas or garbage). Test-only: protobuf's Struct parser is not
// usable in the ThreadSanitizer build (its map, built by the uninstrumented
// library, is read by instrumented inline code). Value type; not synchronised.
#pragma once

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ofl::mini_json {

struct Value {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Value> array;
  std::map<std::string, Value> object;
};

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}
  // The whole text as one value; false on any syntax error.
  bool Parse(Value* out) {
    if (!ParseValue(out)) return false;
    SkipSpace();
    return i_ == s_.size();
  }

 private:
  void SkipSpace() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool Eat(char c) {
    SkipSpace();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool Word(const char* w) {
    const std::string word(w);
    if (s_.compare(i_, word.size(), word) != 0) return false;
    i_ += word.size();
    return true;
  }
  bool ParseString(std::string* out) {
    if (!Eat('"')) return false;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c == '\\') {
        if (i_ >= s_.size()) return false;
        const char e = s_[i_++];
        const std::string simple = "\"\\/bfnrt", meant = "\"\\/\b\f\n\r\t";
        if (e == 'u') {
          if (i_ + 4 > s_.size()) return false;
          c = static_cast<char>(std::strtol(s_.substr(i_, 4).c_str(), nullptr, 16));
          i_ += 4;
        } else if (simple.find(e) != std::string::npos) {
          c = meant[simple.find(e)];
        } else {
          return false;
        }
      }
      out->push_back(c);
    }
    return i_++ < s_.size();
  }
  bool ParseValue(Value* v) {
    SkipSpace();
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '{') {
      ++i_;
      v->kind = Value::kObject;
      if (Eat('}')) return true;
      do {
        std::string key;
        if (!ParseString(&key) || !Eat(':') || !ParseValue(&v->object[key])) return false;
      } while (Eat(','));
      return Eat('}');
    }
    if (c == '[') {
      ++i_;
      v->kind = Value::kArray;
      if (Eat(']')) return true;
      do {
        v->array.emplace_back();
        if (!ParseValue(&v->array.back())) return false;
      } while (Eat(','));
      return Eat(']');
    }
    if (c == '"') {
      v->kind = Value::kString;
      return ParseString(&v->string);
    }
    if (Word("true") || Word("false")) {
      v->kind = Value::kBool;
      v->boolean = c == 't';
      return true;
    }
    if (Word("null")) return true;
    const char* begin = s_.c_str() + i_;
    char* end = nullptr;
    v->kind = Value::kNumber;
    v->number = std::strtod(begin, &end);
    if (end == begin) return false;
    i_ += end - begin;
    return true;
  }

  const std::string& s_;
  size_t i_ = 0;
};

}  // namespace ofl::mini_json
