#include "common/utf8.h"

namespace hd {

// The table of well-formed byte sequences, RFC 3629 section 4: the second byte's range
// depends on the first; later bytes are plain continuations (80..BF).
std::optional<size_t> first_invalid_utf8(std::string_view s) {
  const auto* b = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = b[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // overlong below U+0800
      if (c == 0xED) hi = 0x9F;  // U+D800..DFFF: surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;  // overlong below U+10000
      if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
      return i;  // continuation byte, C0/C1 (overlong), F5..FF
    }
    if (i + len > n || b[i + 1] < lo || b[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k) {
      if (b[i + k] < 0x80 || b[i + k] > 0xBF) return i;
    }
    i += len;
  }
  return std::nullopt;
}

std::string escape_invalid_utf8(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  while (const auto bad = first_invalid_utf8(s)) {
    out.append(s.substr(0, *bad));
    const auto byte = static_cast<unsigned char>(s[*bad]);
    out += "\\x";
    out += kHex[byte >> 4];
    out += kHex[byte & 15];
    s.remove_prefix(*bad + 1);
  }
  out.append(s);
  return out;
}

std::string printable(std::string_view s, size_t max) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  const bool cut = s.size() > max;
  std::string out;
  for (const char c : escape_invalid_utf8(s.substr(0, max))) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    } else {
      out += c;
    }
  }
  return cut ? out + "…" : out;
}

}  // namespace hd
