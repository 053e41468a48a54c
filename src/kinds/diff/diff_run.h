// heterodyne diff: run two arms over a text chunk by chunk into an experiment file.
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/progress.h"
#include "run/chunk_loop.h"
#include "run/config.h"
#include "run/input.h"
#include "run/provenance.h"  // run_provenance, require_same_numerics
#include "run/shard.h"

namespace hd::kinds {
inline constexpr std::string_view kDiffKind = "diff";  // the kind's name (diff_kind.h)
}

namespace hd::run {

// Runs a new diff into `out`; with `shard`, only that shard's chunks (a part for merge).
RunEnd diff_run(const DiffConfig& config, const std::string& out, bool replace,
                const std::string& command_line, const ProgressFn& progress,
                const std::optional<Shard>& shard = std::nullopt);

// Finishes an interrupted diff from its own stored configuration. `again` (none, or a path,
// "-" for standard input) gives the input anew, for a run that read standard input (or whose
// file moved): it must hash as the stored one (run/input.h read_stored_input).
RunEnd diff_resume(const std::string& path, const std::string& command_line,
                   const ProgressFn& progress, const InputPath& again = {});

}  // namespace hd::run
