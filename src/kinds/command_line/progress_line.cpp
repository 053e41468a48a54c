#include <cstdio>
#include <cstdlib>
#include <string>

#include "kinds/command_line/command_line.h"

namespace hd::cli {
// A result (verify's verdict) goes to stdout, where a script reads it, and the rest, which
// says how the work goes, to stderr. HETERODYNE_PROGRESS=json: each line as JSON (what serve
// reads from its children's stderr), a result still on stdout.
void progress_line(const Progress& p) {
  static const bool json = [] {
    const char* v = std::getenv("HETERODYNE_PROGRESS");
    return v != nullptr && std::string(v) == "json";
  }();
  const std::string line = json ? progress_json(p) : p.text;
  FILE* to = p.event == Progress::Event::kResult ? stdout : stderr;
  std::fprintf(to, "%s\n", line.c_str());
  std::fflush(to);
}

}  // namespace hd::cli
