// `heterodyne length-curve`'s table of a run::length_curve result.
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>

namespace hd::report {

void print_length_curve(std::ostream& os, const nlohmann::json& r);

}  // namespace hd::report
