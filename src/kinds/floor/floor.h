// `heterodyne floor`: the batch-invariance explorer. One model and KV cache setting run the
// same chunks with many ubatch sizes (and optionally thread counts and flash attention); each
// run's logits are compared bit for bit with the run of the same thread count and flash
// attention at the reference ubatch, and that run with the reference itself (reference ubatch,
// the first thread count, the first flash-attention value). Which splits reproduce the reference exactly,
// and how far the others move, is the numerical floor a diff has to beat; the pattern is
// summarized from the data (analysis/invariance.h).
//
// Stored in an experiment file of kind "floor": meta "config" and "provenance", the tables
// floor_runs and floor_patterns (kinds/floor/floor_rows.h), written group by group (a group: one
// flash-attention value × thread count), and at the end meta "floor" (the header show prints).
// A stopped or killed floor resumes (floor_resume); verify re-runs it and compares every value.
#pragma once
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "run/chunk_loop.h"
#include "run/verify.h"
#include "kinds/diff/diff_run.h"

namespace hd::kinds {
inline constexpr std::string_view kFloorKind = "floor";  // the kind's name (floor_kind.h)
}

namespace hd::run {

struct FloorConfig {
  // The arm: model, cache types and where it runs (device, layers, RPC servers, llama.cpp
  // build). Its floor_swept_settings() are not read: the lists below replace them.
  engine::ArmSettings arm;
  std::string text_file;
  bool token_ids = false;  // text_file holds token ids (--tokens); stored only when set
  std::vector<int> ubatches;             // each clipped to the chunk (a bigger one is one batch)
  std::vector<int> threads = {0};        // 0: default_threads()
  std::vector<std::string> flash_attn = {"auto"};
  int reference_ubatch = 512;
  int chunk = 128;
  int max_chunks = 4;
  std::string score_from = "1";
  bool skip_unencodable = false;  // as DiffConfig's; stored only when set
};

// The arm settings floor sweeps as lists (n_ubatch, n_threads, flash_attn): neither in its
// stored arm nor among its arm flags.
const std::set<std::string>& floor_swept_settings();

// "1..512" (every integer), "1,2,7", or a mix ("1..8,16,32"). InputError for anything else.
std::vector<int> parse_int_list(const std::string& spec);

nlohmann::json to_json(const FloorConfig& c);
FloorConfig floor_config_from_json(const nlohmann::json& j);

RunEnd floor_run(const FloorConfig& config, const std::string& out, bool replace,
                 const std::string& command_line, const ProgressFn& progress);

// `floor --resume`: checks the stored groups, the model and the input (`again` for one
// read from standard input), runs the groups still missing and seals the file.
RunEnd floor_resume(const std::string& path, const std::string& command_line,
                    const ProgressFn& progress, const InputPath& again = {});

void floor_verify(const std::string& path, const VerifyOptions& options,
                  const ProgressFn& progress);

}  // namespace hd::run
