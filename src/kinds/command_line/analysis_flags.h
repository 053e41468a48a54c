// --analysis NAME[,NAME]: the plug-in analyses (analysis/plugin.h) a diff adds; the help lists
// every one this build has, from the registry. Each analysis' shortcut flag (--routing, --lens,
// …: ChunkAnalysis::shortcut) comes from the registry too.
#pragma once
#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

namespace hd::cli {

struct AnalysisFlags {
  std::vector<std::string> names;
  std::map<std::string, bool> shortcuts;  // by diff flag: given or not
  // The analyses asked for, in order, each once.
  std::vector<std::string> analyses() const;
};

void add_analysis_flags(CLI::App& cmd, AnalysisFlags& flags);

// The analyses' show flags (--routing, --lens: their tables alone), each setting `alone` to its
// name when given.
void add_show_alone_flags(CLI::App& cmd, std::string& alone);

}  // namespace hd::cli
