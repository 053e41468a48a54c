// A chunked run (diff, sweep, floor) from the command line: a new run or a resumed one, and its
// last line, the same for every command that has --resume.
#include "kinds/command_line/command_line.h"
#include "errors.h"

namespace hd::cli {

int report_run_end(const run::RunEnd& end, const std::string& command, const std::string& path) {
  if (!end.written) {
    progress_line("stopped before the first " + end.unit + " was stored: nothing written ('" +
                  path + "' is as it was)");
    return 130;
  }
  if (end.missing > 0) {
    progress_line("stopped with " + std::to_string(end.missing) + " " + end.unit +
                  "s to go; finish with: heterodyne " + command + " --resume " + path);
    return 130;
  }
  progress_line("wrote " + path + "  (heterodyne show " + path + ")");
  return 0;
}

int run_or_resume(const CLI::App& cmd, const ResumableRun& r) {
  run::RunEnd end;
  std::string path = r.out;
  if (!r.resume.empty()) {
    refuse_flags_besides_resume(cmd);
    path = r.resume;
    end = r.resume_run();
  } else {
    for (const auto& [given, need] : r.needed) {
      if (!given) throw InputError(cmd.get_name() + " needs " + need);
    }
    end = r.new_run();
  }
  return report_run_end(end, cmd.get_name(), path);
}

}  // namespace hd::cli
