#include "core/json_object.h"

#include <cstdint>

namespace netqos::core {

const char* JsonTypeName(JsonType type) {
  switch (type) {
    case JsonType::kNull:
      return "null";
    case JsonType::kBool:
      return "bool";
    case JsonType::kNumber:
      return "number";
    case JsonType::kString:
      return "string";
    case JsonType::kArray:
      return "array";
    case JsonType::kObject:
      return "object";
  }
  return "unknown";
}

namespace {

// Deep nesting only serves to exhaust the stack; real enhancement annotations are flat.
constexpr int kMaxDepth = 512;

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  Status Error(const std::string& what) const {
    return InvalidArgument("invalid JSON at offset " + std::to_string(pos_) + ": " + what);
  }

  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return text_[pos_]; }

  // Parses one value; fills `type`, and `str` when the value is a string.
  Status Value(int depth, JsonType& type, std::string* str) {
    if (depth > kMaxDepth) return Error("nesting too deep");
    SkipSpace();
    if (AtEnd()) return Error("unexpected end of input");
    char c = Peek();
    if (c == '{') {
      type = JsonType::kObject;
      return Object(depth, nullptr);
    }
    if (c == '[') {
      type = JsonType::kArray;
      return Array(depth);
    }
    if (c == '"') {
      type = JsonType::kString;
      std::string tmp;
      return String(str != nullptr ? *str : tmp);
    }
    if (c == 't') {
      type = JsonType::kBool;
      return Literal("true");
    }
    if (c == 'f') {
      type = JsonType::kBool;
      return Literal("false");
    }
    if (c == 'n') {
      type = JsonType::kNull;
      return Literal("null");
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      type = JsonType::kNumber;
      return Number();
    }
    return Error(std::string("unexpected character '") + c + "'");
  }

  // Parses an object; collects its members when `members` is non-null.
  Status Object(int depth, std::vector<JsonMember>* members) {
    ++pos_;  // '{'
    SkipSpace();
    if (!AtEnd() && Peek() == '}') {
      ++pos_;
      return Status::Ok();
    }
    while (true) {
      SkipSpace();
      if (AtEnd() || Peek() != '"') return Error("expected a string key");
      JsonMember m;
      NETQOS_RETURN_IF_ERROR(String(m.key));
      SkipSpace();
      if (AtEnd() || Peek() != ':') return Error("expected ':'");
      ++pos_;
      NETQOS_RETURN_IF_ERROR(Value(depth + 1, m.type, &m.string_value));
      if (members != nullptr) members->push_back(std::move(m));
      SkipSpace();
      if (AtEnd()) return Error("unexpected end of input in object");
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == '}') {
        ++pos_;
        return Status::Ok();
      }
      return Error("expected ',' or '}'");
    }
  }

 private:
  Status Array(int depth) {
    ++pos_;  // '['
    SkipSpace();
    if (!AtEnd() && Peek() == ']') {
      ++pos_;
      return Status::Ok();
    }
    while (true) {
      JsonType ignored;
      NETQOS_RETURN_IF_ERROR(Value(depth + 1, ignored, nullptr));
      SkipSpace();
      if (AtEnd()) return Error("unexpected end of input in array");
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == ']') {
        ++pos_;
        return Status::Ok();
      }
      return Error("expected ',' or ']'");
    }
  }

  Status Literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return Error("invalid literal");
    pos_ += word.size();
    return Status::Ok();
  }

  bool Digit() const { return !AtEnd() && Peek() >= '0' && Peek() <= '9'; }

  Status Number() {
    if (Peek() == '-') ++pos_;
    if (!Digit()) return Error("invalid number");
    if (Peek() == '0') {
      ++pos_;
    } else {
      while (Digit()) ++pos_;
    }
    if (!AtEnd() && Peek() == '.') {
      ++pos_;
      if (!Digit()) return Error("invalid number");
      while (Digit()) ++pos_;
    }
    if (!AtEnd() && (Peek() == 'e' || Peek() == 'E')) {
      ++pos_;
      if (!AtEnd() && (Peek() == '+' || Peek() == '-')) ++pos_;
      if (!Digit()) return Error("invalid number");
      while (Digit()) ++pos_;
    }
    return Status::Ok();
  }

  static void AppendUtf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  bool Hex4(uint32_t& out) {
    if (pos_ + 4 > text_.size()) return false;
    out = 0;
    for (int k = 0; k < 4; ++k) {
      char c = text_[pos_++];
      uint32_t d;
      if (c >= '0' && c <= '9') {
        d = static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        d = static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        d = static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return false;
      }
      out = out * 16 + d;
    }
    return true;
  }

  Status String(std::string& out) {
    ++pos_;  // '"'
    while (true) {
      if (AtEnd()) return Error("unterminated string");
      char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return Status::Ok();
      }
      if (static_cast<unsigned char>(c) < 0x20) return Error("control character in string");
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      ++pos_;
      if (AtEnd()) return Error("unterminated escape");
      char e = text_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t cp;
          if (!Hex4(cp)) return Error("invalid \\u escape");
          if (cp >= 0xd800 && cp < 0xdc00) {
            // A high surrogate must pair with a low one; Go substitutes U+FFFD otherwise.
            size_t save = pos_;
            uint32_t low;
            if (pos_ + 2 <= text_.size() && text_[pos_] == '\\' && text_[pos_ + 1] == 'u' &&
                (pos_ += 2, Hex4(low)) && low >= 0xdc00 && low < 0xe000) {
              cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
            } else {
              pos_ = save;
              cp = 0xfffd;
            }
          } else if (cp >= 0xdc00 && cp < 0xe000) {
            cp = 0xfffd;
          }
          AppendUtf8(out, cp);
          break;
        }
        default:
          return Error(std::string("invalid escape '\\") + e + "'");
      }
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

Result<std::vector<JsonMember>> ParseJsonObject(std::string_view text) {
  Reader reader(text);
  reader.SkipSpace();
  std::vector<JsonMember> members;
  if (reader.AtEnd()) return reader.Error("empty document");
  if (reader.Peek() == '{') {
    NETQOS_RETURN_IF_ERROR(reader.Object(0, &members));
  } else {
    JsonType type;
    NETQOS_RETURN_IF_ERROR(reader.Value(0, type, nullptr));
    reader.SkipSpace();
    if (!reader.AtEnd()) return reader.Error("trailing data after the value");
    if (type != JsonType::kNull) {
      return InvalidArgument(std::string("expected a JSON object, got ") + JsonTypeName(type));
    }
    return members;
  }
  reader.SkipSpace();
  if (!reader.AtEnd()) return reader.Error("trailing data after the object");
  return members;
}

}  // namespace netqos::core
