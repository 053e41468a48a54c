#include "cli/analysis_flags.h"

#include "analysis/plugin.h"

namespace hd::cli {

void add_analysis_flag(CLI::App& cmd, std::vector<std::string>& analyses) {
  std::string help = "add plug-in analyses (repeat, or a comma list); this build has:";
  for (const auto& a : analysis::chunk_analyses())
    help += "\n  " + a->name() + ": " + a->description();
  // Names are checked by run::validate, with the list of those that exist.
  cmd.add_option("--analysis", analyses, help)->delimiter(',')->type_name("NAME");
}

}  // namespace hd::cli
