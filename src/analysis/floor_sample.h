// Which chunks a diff measures its floor on (--floor-chunks).
//
// The floor re-runs both arms on other splits: on every chunk it doubles a diff's cost (1.98×
// llama-perplexity's base + KL passes on the qwen3-0.6b pair, against 1.02× without it). Its
// noise is a property of the model, the settings and the split, not of each chunk, so a sample
// spread over the text measures it: `auto` (the default) takes every chunk of a run of 8 or
// fewer, otherwise one chunk in 8, at least 4. The floor then carries its own interval over its
// own chunks, and show says how many it covers.
//
// Chunks are taken in pairs (2j, 2j+1), the pairs evenly spaced over the text: with two floor
// splits (chunk c at split c % 2) both splits get half the sample.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace hd::analysis {

// "all", "auto" or a count N ≥ 1; anything else is an InputError naming the flag.
void check_floor_chunks(const std::string& choice);

// The chunks of a text of `n_chunks` whose floor is measured, in order: every chunk for "all",
// or when the sample would hold as many.
std::vector<int> floor_sample(const std::string& choice, int n_chunks);

// The rule in words, for show: "every chunk", "1 in 8, at least 4; every chunk of runs of 8 or
// fewer", "12 chunks".
std::string floor_rule_text(const std::string& choice);

}  // namespace hd::analysis
