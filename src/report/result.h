// The result of an experiment as one JSON document: what the web page and the HTML report draw.
//   {format: 2, summary: <show --json>, pieces: {"<token id>": text},
//    chunks: [{chunk, tokens: [id], scored, kl, nll_a, nll_b, top_a, top_b,
//              layers: [{layer, rel_err}], points?, denoise?, noise?}]}
// Every per-token array is indexed by the chunk's token index i: its numbers score the
// prediction of token i from the logits at i − 1 (index 0 has none: null, scored 0).
// top_a/top_b are flat [id, p, id, p, ...]; denoise/noise hold one array per restore point.
#pragma once
#include <nlohmann/json.hpp>

#include "report/show.h"

namespace hd::report {

nlohmann::json result_json(const Loaded& l);

}  // namespace hd::report
