// `heterodyne check`, the CI gate: a candidate arm run on the tokens of a reference made by
// `capture` (and calibrated by `calibrate`, run/calibrate.h); per tap max/mean |Δ| and relative
// error against its tolerance; the first tap over it in forward order is the answer.
//
// With -o the verdict is also an experiment file of kind "check": meta "config" (the reference
// and the candidate), "provenance" (the builds, the machine, the sha256 of the reference's
// three files and of the candidate) and "check" (the result below). It has one unit, the check
// itself, so a file exists only once it is done; verify runs the check again and compares every
// number bit for bit.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/progress.h"
#include "engine/arm.h"
#include "run/chunk_loop.h"
#include "run/verify.h"
#include "run/input.h"
#include "run/reference.h"

namespace hd::kinds {

inline constexpr std::string_view kCheckKind = "check";

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
// when its max |Δ| exceeds its tap's tolerance. InputError (exit 2) for a bad configuration: no
// tolerances, another model without allow_model_change, tokens the candidate cannot take,
// shapes that differ.
nlohmann::json check_reference(const CheckConfig& config);
// The same on the reference already read (run::load_reference): `check -o` reads it once for the
// result, the stored configuration and the provenance.
nlohmann::json check_reference(const CheckConfig& config, const run::Reference& ref);

// The check stored in `out` (meta "check" holds check_reference's result).
run::RunEnd check_run(const CheckConfig& config, const std::string& out, bool replace,
                      const std::string& command_line, const ProgressFn& progress);
// `check --resume`: a file is written only once its check is done, so there is nothing to add
// to: it says so, or seals a file stopped while sealing.
run::RunEnd check_resume(const std::string& path, const std::string& command_line,
                         const ProgressFn& progress);
// The check run again with its stored configuration, once the reference's files and the
// candidate are checked against the sha256 it recorded (unless `force`): RuntimeError when the
// result differs in any bit.
void check_verify(const std::string& path, const run::VerifyOptions& options, const ProgressFn& progress);
// The stored result of a check file (meta "check"), for its exit code.
nlohmann::json stored_check(const std::string& path);

}  // namespace hd::kinds
