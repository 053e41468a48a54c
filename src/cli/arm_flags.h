// Arm settings as flags: the same spellings as llama.cpp (-ctk -ctv -fa -ub -t) apply to both
// arms, and --a-… / --b-… override them for one arm.
#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "engine/arm.h"

namespace hd::cli {

struct ArmFlags {
  std::optional<std::string> cache_type_k, cache_type_v, flash_attn;
  std::optional<int> n_ubatch, n_threads;
  std::optional<std::string> device, llama_build;
  std::optional<int> n_gpu_layers;
  std::optional<std::string> rpc;  // host:port[,host:port…], split by resolve_arm
  std::string prefix;              // "", "a-" or "b-": how the flags are spelled, for messages
};

// Registers the shared flags (prefix "") or one arm's overrides (prefix "a-" / "b-").
void add_arm_flags(CLI::App& cmd, ArmFlags& flags, const std::string& prefix);

// The shared values, overridden by the arm's own, over llama.cpp's defaults.
engine::ArmSettings resolve_arm(const std::string& model, const ArmFlags& shared,
                                const ArmFlags& own);

// How a run reads its text, as diff and sweep spell it: --chunk, --max-chunks, --score-from.
void add_chunk_flags(CLI::App& cmd, int& chunk, int& max_chunks, std::string& score_from);

// A path as a run stores it: absolute and normalized, so resume and verify may run from another
// directory. "" and "-" (standard input, which readers refuse by name) are kept as they are.
std::string stored_path(const std::string& path);

// A validator for real-valued flags: a finite number above `lo` (at least `lo` when
// `lo_allowed`). CLI11's own range checks let "nan" through (no comparison with NaN is true).
CLI::Validator finite_number(double lo, bool lo_allowed);

// llama.cpp spells some flags with one dash and several letters (-ctk); CLI11 wants those as
// long options. Rewrites argv in place of the copy it returns.
std::vector<std::string> normalize_llama_flags(int argc, char** argv);

}  // namespace hd::cli
