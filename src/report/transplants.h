// show --transplants / --components / --position: where in the network the divergence forms.
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "analysis/against_floor.h"
#include "analysis/transplant_summary.h"
#include "report/show.h"

namespace hd::report {

// `floor_hi`: the KL floor every value is read against, its upper end and mean (report/noise_floor.h).
void print_transplants(std::ostream& os, const analysis::TransplantSummary& s, const analysis::FloorRef& floor_hi);
void print_components(std::ostream& os, const analysis::TransplantSummary& s, const analysis::FloorRef& floor_hi);
// `where` is "CHUNK:POS". InputError when it names no stored scored position.
// --position CHUNK:POS, read strictly (whole numbers): InputError otherwise.
struct Position {
  int chunk = 0, pos = 0;
};
Position parse_position(const std::string& where);
void print_position(std::ostream& os, const Loaded& l, const Position& where);

// {transplants: {denoise: [...], noise: [...]}, components: {denoise: {...}, noise: {...}}}
void add_transplants_json(nlohmann::json& j, const analysis::TransplantSummary& s,
                          const analysis::FloorRef& floor_hi);

}  // namespace hd::report
