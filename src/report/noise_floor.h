// A diff's figures beside its numerical floor: both arms' floors (A vs A′, B vs B′), the larger
// of the two that each figure is read against, and the statements "interval includes 0" and
// "within the floor" (analysis/against_floor.h) in the text table and in --json.
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "analysis/against_floor.h"
#include "report/show.h"

namespace hd::report {

// The KL table (A vs B, the floor, each arm's floor, the statements), the percentiles and the
// per-layer residual table of `show`.
void print_against_floor(std::ostream& os, const Loaded& l);

// floor_kl_mean / _ci95 / floor_top1_change_rate (the larger floor), floor {…}, floor_a,
// floor_b, standing {kl, top1_change}, intervals_note; and each layer's floor columns.
void add_floor_json(nlohmann::json& j, const Loaded& l);

// Which splits the floor was measured on ("floor: two splits, chunks alternating: A′ at ubatch
// 65, B′ at 65 (even chunks, KL 1.2e-4); A′ at ubatch 43 …") and whether they disagree by more
// than 10×; "" without a floor. show, --json (floor_splits_note) and the result page.
std::string floor_splits_note(const Loaded& l);
// "floor: measured on 4 of 32 chunks (…)" where the floor's sample (analysis/floor_sample.h) is
// not every chunk; "" otherwise. show, --json (floor_coverage_note) and the result page.
std::string floor_coverage_note(const Loaded& l);

// "0 (bitwise)", "m ± ci" or "not measured": the floor a ladder row prints.
std::string floor_kl_cell(const analysis::Summary& s);

// A comparison's totals as --json writes them (the diff's at the top level, each floor's).
nlohmann::json comparison_json(const analysis::ComparisonSummary& s);

// The statements as a JSON array of strings (empty when none holds).
nlohmann::json standing_json(const analysis::Standing& s);

// The KL floor that transplant and component values are read against: its upper end (0 for a
// bitwise floor, NaN without one) and its mean, which ratios are taken to.
analysis::FloorRef kl_floor(const analysis::Summary& s);

}  // namespace hd::report
