// The last line of a chunked run, the same for every command that has --resume.
#include "cli/commands.h"

namespace hd::cli {

int report_run_end(const run::RunEnd& end, const std::string& command, const std::string& path) {
  if (!end.written) {
    progress_line("stopped before the first chunk was stored: nothing written ('" + path +
                  "' is as it was)");
    return 130;
  }
  if (end.missing > 0) {
    progress_line("stopped with " + std::to_string(end.missing) +
                  " chunks to go; finish with: heterodyne " + command + " --resume " + path);
    return 130;
  }
  progress_line("wrote " + path + "  (heterodyne show " + path + ")");
  return 0;
}

}  // namespace hd::cli
