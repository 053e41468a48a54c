#include "common/token_ids.h"

#include <cstdio>
#include <limits>

#include "errors.h"

namespace hd {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// An entry as a message shows it: short, and one printable line whatever the file holds.
std::string shown(std::string_view entry) {
  constexpr size_t kShown = 24;
  std::string out;
  for (const char c : entry.substr(0, kShown)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out.push_back(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", u);
      out += hex;
    }
  }
  return entry.size() > kShown ? out + "…" : out;
}

// Why `entry` is no token id ("" when it is one, then set into `id`): the wording a user
// needs to fix the file, a float and a negative number named as such.
std::string id_of(std::string_view entry, int32_t& id) {
  if (entry.empty()) return "empty (two commas, or a comma before ']')";
  const bool negative = entry[0] == '-', plus = entry[0] == '+';
  size_t n_digits = 0;
  bool only_digits = true, number_chars = true;  // number_chars: what a float may hold
  bool fraction_or_exponent = false;             // a float has one of them
  int64_t v = 0;
  for (size_t i = negative || plus ? 1 : 0; i < entry.size(); ++i) {
    const char c = entry[i];
    if (c >= '0' && c <= '9') {
      ++n_digits;
      if (v <= std::numeric_limits<int32_t>::max()) v = v * 10 + (c - '0');
      continue;
    }
    only_digits = false;
    if (c == '.' || c == 'e' || c == 'E') fraction_or_exponent = true;
    if (c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-') number_chars = false;
  }
  if (n_digits == 0 || !only_digits) {
    return n_digits > 0 && number_chars && fraction_or_exponent
               ? "a float, not an integer token id"
               : "not an integer token id";
  }
  if (plus) return "signed: write a token id as digits alone (5, not +5)";
  if (negative) return "negative: token ids are 0 or more";
  if (v > std::numeric_limits<int32_t>::max()) return "past any token id (they fit 32 bits)";
  id = static_cast<int32_t>(v);
  return "";
}

class Parser {
 public:
  Parser(std::string_view s, const std::string& what) : s_(s), what_(what) {}

  std::vector<int32_t> parse() {
    skip_space();
    if (at_ < s_.size() && s_[at_] == '[') {
      json_array();
    } else {
      while (at_ < s_.size()) {
        add(entry([](char c) { return is_space(c); }));
        skip_space();
      }
    }
    if (ids_.empty()) throw InputError(what_ + " holds no token ids");
    return std::move(ids_);
  }

 private:
  void skip_space() {
    while (at_ < s_.size() && is_space(s_[at_])) ++at_;
  }

  // The bytes from here to the first `ends` (or the end), consumed.
  template <class Ends>
  std::string_view entry(Ends ends) {
    start_ = at_;
    while (at_ < s_.size() && !ends(s_[at_])) ++at_;
    return s_.substr(start_, at_ - start_);
  }

  void add(std::string_view e) {
    int32_t id = 0;
    const std::string why = id_of(e, id);
    if (!why.empty()) {
      throw InputError(what_ + ": entry " + std::to_string(ids_.size()) + " (byte " +
                       std::to_string(start_) + ") is '" + shown(e) + "', " + why);
    }
    ids_.push_back(id);
  }

  // `[ id (, id)* ]` or `[ ]`, then only white space.
  void json_array() {
    const size_t open = at_++;
    skip_space();
    bool closed = at_ < s_.size() && s_[at_] == ']';
    while (!closed && at_ < s_.size()) {
      add(entry([](char c) { return is_space(c) || c == ',' || c == ']'; }));
      skip_space();
      if (at_ < s_.size() && s_[at_] == ',') {
        ++at_;
        skip_space();
      } else if (at_ < s_.size() && s_[at_] == ']') {
        closed = true;
      } else if (at_ < s_.size()) {
        throw InputError(what_ + ": byte " + std::to_string(at_) + " is '" +
                         shown(s_.substr(at_, 1)) + "' where the JSON array needs ',' or ']'");
      }
    }
    if (!closed) {
      throw InputError(what_ + ": the JSON array opened at byte " + std::to_string(open) +
                       " is not closed (no ']')");
    }
    ++at_;
    skip_space();
    if (at_ < s_.size()) {
      throw InputError(what_ + ": byte " + std::to_string(at_) + " is '" +
                       shown(s_.substr(at_, 1)) + "', after the JSON array's end");
    }
  }

  std::string_view s_;
  const std::string& what_;
  size_t at_ = 0, start_ = 0;
  std::vector<int32_t> ids_;
};

}  // namespace

std::vector<int32_t> parse_token_ids(std::string_view bytes, const std::string& what) {
  return Parser(bytes, what).parse();
}

void check_token_ids(const std::vector<int32_t>& ids, int n_vocab, const std::string& what) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= n_vocab) {
      throw InputError(what + ": entry " + std::to_string(i) + " is id " + std::to_string(ids[i]) +
                       ", outside this model's vocabulary of " + std::to_string(n_vocab) +
                       " (ids 0 to " + std::to_string(n_vocab - 1) + ")");
    }
  }
}

}  // namespace hd
