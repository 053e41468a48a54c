#include "serve/request_head.h"

#include <algorithm>
#include <cctype>

namespace hd::serve {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim_ows(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

std::vector<HeaderLine> header_lines(const std::string& head) {
  std::vector<HeaderLine> out;
  size_t at = head.find("\r\n");
  while (at != std::string::npos && at + 2 < head.size()) {
    const size_t start = at + 2, end = head.find("\r\n", start);
    if (end == std::string::npos || end == start) break;
    const std::string line = head.substr(start, end - start);
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      const size_t v = line.find_first_not_of(" \t", colon + 1);
      const size_t e = line.find_last_not_of(" \t");
      out.push_back({lower(line.substr(0, colon)),
                     v == std::string::npos ? "" : line.substr(v, e - v + 1), start,
                     end + 2 - start});
    }
    at = end;
  }
  return out;
}

size_t announced_body(const std::vector<HeaderLine>& lines, size_t max) {
  for (const auto& h : lines) {
    if (h.name == "transfer-encoding") return 0;
  }
  for (const auto& h : lines) {
    if (h.name != "content-length") continue;
    if (h.value.empty() || h.value.size() > 18 ||
        !std::all_of(h.value.begin(), h.value.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      return 0;
    const size_t n = std::stoull(h.value);
    return n <= max ? n : 0;
  }
  return 0;
}

}  // namespace hd::serve
