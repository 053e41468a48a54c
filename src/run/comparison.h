// How one pair of passes becomes a Comparison (analysis/records.h): positions scored over the
// full vocabulary, residual rows diffed. Session::compare does it for two whole passes held at
// once; the lean pass (run/session_lean.cpp) does it a piece, or a ubatch's rows, at a time. Both
// go through these, so the two orders give the same rows, bit for bit.
#pragma once
#include <functional>
#include <span>
#include <string>

#include "analysis/records.h"
#include "run/scoring.h"

namespace hd::run {

// Runs `fn(lo, hi)` over [0, n) on up to `threads` threads, in contiguous blocks.
void parallel_for(int n, int threads, const std::function<void(int, int)>& fn);

// Scores positions [from, to) of `rows` into `c.positions`, which holds a row for every
// position from `first_output` (the chunk's) to n - 2: position p is row p - first_output.
// `first_target`: the first target scored (config.h first_scored_target).
void score_into(analysis::Comparison& c, const PassRows& rows, int from, int to, int first_output,
                int first_target, int threads);

// Refuses the first residual row (in the layers' order) whose diff is not finite: a number that
// is not would be stored and summarized as if it meant something. Called once a pass's logits
// are in: a broken logit is the more precise message (it names the arm), as llama.cpp's rows
// come before the scoring.
void check_rows_finite(const analysis::Comparison& c, const std::string& model_a,
                       const std::string& model_b);

}  // namespace hd::run
