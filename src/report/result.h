// The result of an experiment as one JSON document: what the web page and the HTML report draw.
//   {summary: <show --json>, chunks: [{chunk, positions: [{pos, text, target, scored, kl,
//    nll_a, nll_b, top_a: [[text, p]...], top_b: [...]}]}]}
// Position i of a chunk is the token the logits at i-1 predict; position 0 (nothing predicts
// it) is present with scored=false so the text reads whole.
#pragma once
#include <nlohmann/json.hpp>

#include "report/show.h"

namespace hd::report {

nlohmann::json result_json(const Loaded& l);

}  // namespace hd::report
