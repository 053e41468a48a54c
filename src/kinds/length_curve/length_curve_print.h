// length-curve's table, of a curve_document (length_curve.h): printed without -o, and by show.
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>

namespace hd::kinds {

void print_length_curve(std::ostream& os, const nlohmann::json& r);

}  // namespace hd::kinds
