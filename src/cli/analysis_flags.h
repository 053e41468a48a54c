// --analysis NAME[,NAME]: the plug-in analyses (analysis/plugin.h) a diff adds; the help lists
// every one this build has, from the registry.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace hd::cli {

void add_analysis_flag(CLI::App& cmd, std::vector<std::string>& analyses);

}  // namespace hd::cli
