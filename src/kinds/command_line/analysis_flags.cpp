#include "kinds/command_line/analysis_flags.h"

#include <algorithm>

#include "analysis/plugin.h"
#include "errors.h"

namespace hd::cli {

std::vector<std::string> AnalysisFlags::analyses() const {
  std::vector<std::string> out = names;  // a name given twice is refused by run::validate
  for (const auto& a : analysis::chunk_analyses()) {
    const std::string flag = a->shortcut().diff_flag;
    if (flag.empty() || !shortcuts.count(flag) || !shortcuts.at(flag)) continue;
    if (std::find(out.begin(), out.end(), a->name()) == out.end()) out.push_back(a->name());
  }
  return out;
}

void add_analysis_flags(CLI::App& cmd, AnalysisFlags& flags) {
  for (const auto& a : analysis::chunk_analyses()) {
    const analysis::Shortcut s = a->shortcut();
    if (s.diff_flag.empty() || flags.shortcuts.count(s.diff_flag)) continue;  // the first's help
    cmd.add_flag("--" + s.diff_flag, flags.shortcuts[s.diff_flag], s.diff_help);
  }
  std::string help = "add plug-in analyses (repeat, or a comma list); this build has:";
  for (const auto& a : analysis::chunk_analyses())
    help += "\n  " + a->name() + ": " + a->description();
  // Names are checked by run::validate, with the list of those that exist.
  cmd.add_option("--analysis", flags.names, help)->delimiter(',')->type_name("NAME");
}

void add_show_alone_flags(CLI::App& cmd, std::string& alone) {
  std::vector<std::string> seen;
  for (const auto& a : analysis::chunk_analyses()) {
    const analysis::Shortcut s = a->shortcut();
    if (s.show_flag.empty() ||
        std::find(seen.begin(), seen.end(), s.show_flag) != seen.end())
      continue;
    seen.push_back(s.show_flag);
    cmd.add_flag_callback(
        "--" + s.show_flag,
        [&alone, flag = s.show_flag] {
          if (!alone.empty() && alone != flag)
            throw InputError("--" + alone + " and --" + flag + " each print one analysis alone: "
                             "give one of them");
          alone = flag;
        },
        s.show_help);
  }
}

}  // namespace hd::cli
