// heterodyne diff: run two arms over a text chunk by chunk into an experiment file.
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/progress.h"
#include "run/chunk_loop.h"
#include "run/config.h"
#include "run/provenance.h"  // run_provenance, require_same_llama_commit

namespace hd::run {

// Runs a new diff into `out`.
RunEnd diff_run(const DiffConfig& config, const std::string& out, bool replace,
             const std::string& command_line, const ProgressFn& progress);

// Finishes an interrupted diff from its own stored configuration. `text_again` ("" or a path,
// "-" for standard input) gives the text anew, for a run that read standard input (or whose
// file moved): it must hash as the stored one.
RunEnd diff_resume(const std::string& path, const std::string& command_line,
                   const ProgressFn& progress, const std::string& text_again = "");

}  // namespace hd::run
