// The CI gate on a reference made by `capture`:
//   calibrate: rerun the reference's own arm in ways that must not matter (another ubatch split,
//     another thread count); per tap atol = max(safety * max observed |Δ|, jitter_floor *
//     max |ref|), each with how it was derived -> <ref>/tolerances.json.
//   check: run a candidate arm on the reference's tokens; per tap max/mean |Δ| and relative
//     error against its tolerance; the first tap over it in forward order is the answer.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "engine/arm.h"

namespace hd::run {

struct CalibrateConfig {
  std::string reference;
  double safety = 2.0;
  double jitter_floor = 1e-3;  // relative to each tap's max |ref|
  bool force = false;          // replace an existing tolerances.json
};

// Writes <reference>/tolerances.json and returns it. InputError for a missing reference.
nlohmann::json calibrate_reference(const CalibrateConfig& config);

struct CheckConfig {
  std::string reference;
  engine::ArmSettings arm;  // the candidate
  bool allow_model_change = false;
  double jitter_floor = 0;  // > 0: loosen every tolerance to at least this * max |ref|
  int decode_steps = -1;    // compare this many of the reference's decode steps; -1: all
  bool per_head = false;    // split every kqv_out tap into heads
};

// {passed, first_divergent_tap, decode_steps, taps: [{name, max_abs, mean_abs, rel_err,
//  tolerance, over}], per_head: [{tap, layer, max_abs: [per head], worst_head, median,
//  concentration, tolerance, heads_over}], first_divergent_head (with per_head)}. A head is over
// when its max |Δ| exceeds its tap's tolerance. InputError (exit 2) for a bad configuration: no tolerances, another model
// without allow_model_change, tokens the candidate cannot take, shapes that differ.
nlohmann::json check_reference(const CheckConfig& config);

}  // namespace hd::run
