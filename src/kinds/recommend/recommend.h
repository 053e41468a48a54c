// `heterodyne recommend`: per-tensor quantization types chosen by measured KL, and proven.
//
// For every tensor group (a tensor class in a layer, or in a range of layers; token_embd;
// output) and every candidate type, the base file type with that group alone at that type is
// made (spliced from files llama.cpp's quantizer made: recommend_variants.h), its tensor types
// read back, and its mean KL against A measured
// on the calibration text (and, for the rank check only, on the held-out text). The types are
// then chosen exactly (analysis/recipe.h: the least predicted KL within a size, or the fewest
// bytes within a KL), the recipe model made with those overrides and every tensor's type read
// back, and the recipe and the stock types bracketing its size are diffed against A on the
// held-out text only (docs/recommend.md).
//
// Outputs, in one directory: tensor-types.txt (llama-quantize --tensor-type-file), model.gguf,
// report.hdy (kind "recommend": meta "config", "provenance", the table recommend_sensitivity,
// written group by group; at the end meta "recommend", the summary show prints) and
// held-out/<name>.hdy, one diff per model compared. A stopped run resumes from report.hdy;
// verify re-measures every group and makes the recipe model again, byte for byte.
#pragma once
#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "run/chunk_loop.h"
#include "run/input.h"

namespace hd::kinds {
inline constexpr std::string_view kRecommendKind = "recommend";  // the kind's name (recommend_kind.h)
}

namespace hd::run {

struct RecommendConfig {
  std::string model;       // F32, F16 or BF16
  InputPath calibration;   // sensitivities are measured on it
  InputPath held_out;      // the proof is measured on it, never on the calibration text
  std::string base = "Q4_K_M";  // the file type every group starts from
  std::vector<std::string> types = {"Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_0"};
  std::string target_size;  // as given: "2.1GiB", "800MB", "123456" or a stock type "Q4_K_M"
  uint64_t target_bytes = 0;  // the file size it means (0: a KL target)
  double target_kl = NAN;     // mean KL on the calibration text (NaN: a size target)
  int chunk = 256;
  int calibration_chunks = 8;
  int held_out_chunks = 16;
  int layers_per_group = 1;
  // Rounds of measurement: round 0 starts at the base, each later one at the recipe the round
  // before chose (its deltas measured there, the choice made again): 2 measures the first
  // recipe's neighbourhood once.
  int rounds = 2;
  // Variants spliced from their start and passes started at their group's first point (the
  // same figures, bit for bit); false (--no-reuse): each quantized whole, every pass from the
  // tokens. Stored only when false.
  bool reuse = true;
};

nlohmann::json to_json(const RecommendConfig& c);
RecommendConfig recommend_config_from_json(const nlohmann::json& j);

// "2.1GiB" (KiB, MiB, GiB, TiB: powers of 1024; kB, MB, GB, TB: of 1000; B or none: bytes).
// nullopt for what is not a size.
std::optional<uint64_t> parse_size(const std::string& s);

// Runs a new recommendation into directory `out` (made if missing; its files are replaced only
// with `replace`).
RunEnd recommend_run(RecommendConfig config, const std::string& out, bool replace,
                     const std::string& command_line, const ProgressFn& progress);

// Finishes a stopped recommendation from its report.hdy.
RunEnd recommend_resume(const std::string& report, const std::string& command_line,
                        const ProgressFn& progress);

// Prints what recommend_run would do and about how long it would take (one of A's chunk
// passes on up to 3 chunks timed); writes nothing but the quantized base and target type to
// the cache.
void recommend_dry_run(RecommendConfig config, std::ostream& out, const ProgressFn& progress);

void recommend_verify(const std::string& report, bool force, const ProgressFn& progress);

}  // namespace hd::run
