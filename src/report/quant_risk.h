// `heterodyne quant-risk`'s table of a run::reference_quant_risk result.
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>

namespace hd::report {

void print_quant_risk(std::ostream& os, const nlohmann::json& r);

}  // namespace hd::report
