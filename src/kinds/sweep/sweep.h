// `heterodyne sweep`: how much of the divergence between two arms each differing setting
// causes. Every combination of the settings in which A and B differ (any of engine's arm
// settings: model file, K and V types, flash attention, ubatch, threads, device, layers, RPC
// servers, llama.cpp build) runs on the same chunks as diff would, each scored
// against arm A's logits (computed once per chunk). From the per-chunk mean KLs come main
// effects, pairwise interactions and exact Shapley values (analysis/attribution.h), each with
// a 95 % interval over chunks, next to the numerical floor.
//
// Stored in an experiment file of kind "sweep": meta "config", "provenance",
// "sweep_combinations", every scored position's KL and NLL per combination (and the floor) and
// each chunk's top-1 changes in the tables of store/sweep_rows.h, and at the end meta "sweep"
// (the summary show prints, kinds/sweep/sweep_summary.h). The file appears with its first chunk; an interrupted sweep is finished with
// sweep --resume. verify re-runs every chunk and compares the rows byte for byte.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "run/config.h"
#include "run/verify.h"
#include "kinds/diff/diff_run.h"

namespace hd::store {
class Experiment;
}

namespace hd::kinds {
inline constexpr std::string_view kSweepKind = "sweep";  // the kind's name (sweep_kind.h)
}

namespace hd::run {

// The settings a sweep can attribute to, in this order: every kArmFields key, in table order
// (a stored sweep's masks count bits in it).
const std::vector<std::string>& sweep_setting_names();

// The names of the settings in which a and b differ.
std::vector<std::string> differing_settings(const engine::ArmSettings& a,
                                            const engine::ArmSettings& b);

// A's settings with B's value for every differing setting whose bit is set in `mask`.
engine::ArmSettings combination(const engine::ArmSettings& a, const engine::ArmSettings& b,
                                const std::vector<std::string>& settings, unsigned mask);

// Runs the sweep into `out`: with config.b_quant, B's model is A's quantized to that type (as
// diff makes it); transplants and residuals are not used.
// max_arms bounds 2^k (InputError above it).
// With `shard`, only that shard's chunks (a part for heterodyne merge, run/merge.h).
RunEnd sweep_run(const DiffConfig& config, int max_arms, const std::string& out, bool replace,
                 const std::string& command_line, const ProgressFn& progress,
                 const std::optional<Shard>& shard = std::nullopt);

// Finishes an interrupted sweep from its own stored configuration (the rows already stored
// must hash as recorded, and the models as the combinations record them).
RunEnd sweep_resume(const std::string& path, const std::string& command_line,
                    const ProgressFn& progress, const InputPath& again = {});

// Meta "sweep", the summary, computed again from every chunk's rows the file holds: what a
// merged sweep stores (its parts' summaries are of their own chunks).
void store_sweep_summary(store::Experiment& e);

// Re-runs a stored sweep chunk by chunk; RuntimeError at the first row that differs.
void sweep_verify(const std::string& path, const VerifyOptions& options,
                  const ProgressFn& progress);

}  // namespace hd::run
