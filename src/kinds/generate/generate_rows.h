// The generate kind's tables, one prompt's rows and their hash (meta "generate_sha256/<p>")
// written in one transaction:
//   generate_prompts   (prompt, text, tokens): the prompt as the model read it, its token ids
//   generate_tokens    (prompt, arm, trial, i, token, piece, logprob, top): every generated
//                      token of A (trial 0) and of each of B's trials, its text, and the top-5
//                      it was chosen from ([[id, p, piece], …])
//   generate_partings  (prompt, trial, parted, common, ended_a, ended_b, transplant): B's trial
//                      against A: the first parting token's index (-1: never), the common
//                      prefix, whether each ended, and the parting's transplant (JSON; "" none)
#pragma once
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "kinds/generate/generate_decode.h"

namespace hd::store {
class Experiment;
}

namespace hd::kinds {

struct Parting {
  int parted = -1;  // the index of the first generated token that differs; -1: never
  int common = 0;   // tokens both generated before it (all of the shorter where never)
  std::string transplant;  // generate_transplant.h's JSON, "" where none was run
};

struct PromptResult {
  int prompt = 0;
  std::string text;
  std::vector<int32_t> tokens;
  Completion a;
  std::vector<Completion> b;      // one per trial
  std::vector<Parting> partings;  // one per trial
};

void create_generate_tables(store::Experiment& e);
// `model` gives the tokens' texts (B shares A's vocabulary).
void put_generate_prompt(store::Experiment& e, const engine::Model& model, const PromptResult& r);
// Every stored prompt in order; InputError for a row of another shape (damage).
std::vector<PromptResult> read_generate_prompts(const store::Experiment& e);
// The stored prompts, each checked against the hash stored with it: InputError for a prompt
// changed since, which resume never adds to.
std::set<int> resumable_generate_prompts(const store::Experiment& e);
// A top-5 as generate_tokens.top stores it and every reader writes it again: [[id, p, piece], …]
// (the pieces for readers: show, the page, export; never compared).
nlohmann::json top5_json(const analysis::TopK& top,
                         const std::array<std::string, analysis::kTopK>& pieces);

// Bit for bit: every token, logprob, top-5, parting and transplant.
bool same_result(const PromptResult& x, const PromptResult& y);

}  // namespace hd::kinds
