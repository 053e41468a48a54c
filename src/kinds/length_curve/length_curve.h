// `heterodyne length-curve`: how two arms' disagreement grows with the prompt's length. For
// each length L the first L tokens of a text run through both arms as one batch from an empty
// cache; the final layer's residual (l_out-(n_layer-1)) and the logits are compared at every
// position. A setting that only matters past a ubatch or KV-padding boundary shows up as a
// step between two lengths rather than as a slope.
//
// With -o the curve is an experiment file of kind "length-curve": meta "config" and
// "provenance", the table length_curve_rows (one row per length, each with its hash, stored as
// it is measured), and at the end meta "length-curve" (the document printed without -o). It
// resumes (the lengths still missing) and verifies (every length measured again, bit for bit)
// like every kind.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/progress.h"
#include "engine/arm.h"
#include "run/chunk_loop.h"
#include "run/verify.h"
#include "run/input.h"

namespace hd::kinds {

inline constexpr std::string_view kLengthCurveKind = "length-curve";

struct LengthCurveConfig {
  engine::ArmSettings a, b;
  std::string text_file;
  bool token_ids = false;    // text_file holds token ids (--tokens, run/input.h)
  std::vector<int> lengths;  // strictly increasing, each at least 1
  bool skip_unencodable = false;  // drop the lines the vocabulary cannot encode (run/text.h)
};

nlohmann::json to_json(const LengthCurveConfig& c);
LengthCurveConfig length_curve_config_from_json(const nlohmann::json& j);

// One length's comparison. rel_err is ||Δ|| / ||A|| over the whole [L, n_embd] residual
// (Frobenius) and max_abs its largest |Δ|, both stored NULL and JSON null (not measured, not
// zero) where the model has no proven last-layer residual (residual_measured false); mean_kl
// and max_kl are KL(A || B) over all L positions (+inf where B masks a token A gives mass: JSON
// "inf"); top1_flips counts positions whose argmax differs.
struct LengthRow {
  int length = 0;
  bool residual_measured = true;
  double rel_err = 0, max_abs = 0, mean_kl = 0, max_kl = 0;
  int top1_flips = 0;
};

// {a, b, tokens, rows: [{length, rel_err, max_abs, mean_kl, max_kl, top1_flips}]}: what
// --format json prints and meta "length-curve" holds.
nlohmann::json curve_document(const LengthCurveConfig& c, const std::vector<LengthRow>& rows);

// The curve, printed and stored in nothing: InputError for bad lengths, a text too short for the
// longest, or arms with other vocabularies or widths.
nlohmann::json length_curve(const LengthCurveConfig& config, const ProgressFn& progress);

// The curve stored in `out` length by length (run/chunk_loop.h: a stop keeps the lengths done).
run::RunEnd length_curve_run(const LengthCurveConfig& config, const std::string& out,
                             bool replace, const std::string& command_line,
                             const ProgressFn& progress);
// `length-curve --resume`: the lengths still missing, with the models and input checked as
// stored.
run::RunEnd length_curve_resume(const std::string& path, const std::string& command_line,
                                const ProgressFn& progress, const run::InputPath& again);
// Every stored length measured again and compared bit for bit: RuntimeError at the first
// difference.
void length_curve_verify(const std::string& path, const run::VerifyOptions& options,
                         const ProgressFn& progress);

}  // namespace hd::kinds
