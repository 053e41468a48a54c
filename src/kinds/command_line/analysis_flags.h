// --analysis NAME[,NAME]: the plug-in analyses (analysis/plugin.h) a diff adds; the help lists
// every one this build has, from the registry. --routing and --routing-transplant are names for
// the MoE ones, --lens for the logit lens.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace hd::cli {

struct AnalysisFlags {
  std::vector<std::string> names;
  bool routing = false, routing_transplant = false, lens = false;
  // The analyses asked for, in order, each once.
  std::vector<std::string> analyses() const;
};

void add_analysis_flags(CLI::App& cmd, AnalysisFlags& flags);

}  // namespace hd::cli
