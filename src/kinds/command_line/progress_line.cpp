#include <cstdio>
#include <cstdlib>
#include <string>

#include "kinds/command_line/command_line.h"

namespace hd::cli {
// HETERODYNE_PROGRESS=json: every line as JSON (what serve reads from its children).
void progress_line(const Progress& p) {
  static const bool json = [] {
    const char* v = std::getenv("HETERODYNE_PROGRESS");
    return v != nullptr && std::string(v) == "json";
  }();
  const std::string line = json ? progress_json(p) : p.text;
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

}  // namespace hd::cli
