// `heterodyne length-curve`: how two arms' disagreement grows with the prompt's length. For
// each length L the first L tokens of a text run through both arms as one batch from an empty
// cache; the final layer's residual (l_out-(n_layer-1)) and the logits are compared at every
// position. A setting that only matters past a ubatch or KV-padding boundary shows up as a
// step between two lengths rather than as a slope.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/arm.h"

namespace hd::run {

struct LengthCurveConfig {
  engine::ArmSettings a, b;
  std::string text_file;
  bool token_ids = false;    // text_file holds token ids (--tokens, run/input.h)
  std::vector<int> lengths;  // strictly increasing, each at least 1
  bool skip_unencodable = false;  // drop the lines the vocabulary cannot encode (run/text.h)
};

// {a, b, tokens, rows: [{length, rel_err, max_abs, mean_kl, max_kl, top1_flips}]}. rel_err is
// ||Δ|| / ||A|| over the whole [L, n_embd] residual (Frobenius); mean_kl and max_kl are
// KL(A || B) over all L positions; top1_flips counts positions whose argmax differs.
// InputError for bad lengths, a text too short for the longest, or arms with other vocabularies.
nlohmann::json length_curve(const LengthCurveConfig& config,
                            const std::function<void(const std::string&)>& progress);

}  // namespace hd::run
