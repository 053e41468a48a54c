// `heterodyne bisect`: the first llama.cpp release (and, with --llama-src, the first commit)
// whose outputs on a model differ from a good build's, and the graph node where they begin to.
//
//   heterodyne bisect --model m.gguf [arm settings] -f text.txt
//       --good npm:node-llama-cpp@A --bad npm:node-llama-cpp@B [--llama-src DIR] -o bisect.hdy
//
// The candidates are the node-llama-cpp releases from A to B the npm registry lists (each
// carries one llama.cpp tree), or with --llama-src the commits of DIR from --good to --bad
// (revisions of DIR, or two releases, whose llama.cpp tags DIR must have). Each probe builds
// the candidate (scripts/worker.sh, cached by commit and options) and runs a normal diff of the
// good build (arm A) against it (arm B) on the same text; its figures and the floors they are
// read against are stored. A candidate that does not build or load the model is skipped.
//
// Stored in an experiment file of kind "bisect": meta "config", "provenance",
// "bisect_candidates", meta "bisect_probes" (a JSON list, rewritten as each probe finishes:
// --resume goes on from it), and at the end meta "bisect" (the document show prints): the
// probes, the first differing candidate and, for it, the first graph node whose values differ
// from the good build's (bisect_op.h). The integrity hash of the sealed file covers them all.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/progress.h"
#include "engine/arm.h"
#include "run/chunk_loop.h"
#include "run/verify.h"

namespace hd::kinds {

inline constexpr std::string_view kBisectKind = "bisect";

struct BisectConfig {
  engine::ArmSettings arm;  // the model and the settings both builds run it with
  std::string text_file;
  bool token_ids = false;
  std::string good, bad;    // npm:node-llama-cpp@X.Y.Z, or revisions of llama_src
  std::string llama_src;    // a git checkout of llama.cpp: commits between the two
  // CMake options every candidate is built with (OPTION=VALUE, comma-separated); older trees
  // need LLAMA_CURL=OFF and nothing here fetches anything.
  std::string build_options = "LLAMA_CURL=OFF";
  std::string criterion = "kl";  // kl | flips | exact
  int chunk = 128;
  int max_chunks = 8;
  int decode_steps = 4;  // single-token steps the first differing node is also looked for in
};

nlohmann::json to_json(const BisectConfig& c);
BisectConfig bisect_config_from_json(const nlohmann::json& j);

// InputError for a configuration no bisect can run, a model that is no GGUF or a text that
// cannot be read (before anything is listed or built).
void check_bisect_config(const BisectConfig& config);

// The candidates and the order of the first probes, printed; nothing is built (--dry-run).
void bisect_plan(const BisectConfig& config, std::ostream& out, const ProgressFn& progress);

run::RunEnd bisect_run(const BisectConfig& config, const std::string& out, bool replace,
                       const std::string& command_line, const ProgressFn& progress);
// Goes on from the probes stored: a killed or stopped bisect loses the probe in flight only.
run::RunEnd bisect_resume(const std::string& path, const std::string& command_line,
                          const ProgressFn& progress);
// Every stored probe run again (builds are cached): RuntimeError at the first figure that
// differs in any bit.
void bisect_verify(const std::string& path, const run::VerifyOptions& options,
                   const ProgressFn& progress);

}  // namespace hd::kinds
