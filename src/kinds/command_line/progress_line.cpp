#include <cstdio>
#include <cstdlib>
#include <string>

#include "kinds/command_line/command_line.h"

namespace hd::cli {
// HETERODYNE_PROGRESS=json: every line as JSON on stderr (what serve reads from its children).
// Otherwise a result (verify's verdict) goes to stdout, where a script reads it, and the rest,
// which says how the work goes, to stderr.
void progress_line(const Progress& p) {
  static const bool json = [] {
    const char* v = std::getenv("HETERODYNE_PROGRESS");
    return v != nullptr && std::string(v) == "json";
  }();
  if (!json && p.event == Progress::Event::kResult) {
    std::fprintf(stdout, "%s\n", p.text.c_str());
    std::fflush(stdout);
    return;
  }
  const std::string line = json ? progress_json(p) : p.text;
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

}  // namespace hd::cli
