// A stored bisect as `show` prints it: the line of candidates with each probe's figures against
// its floor, the first that differs marked, and where its numbers part from the good build's.
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>

namespace hd::kinds::bisect {

void print_bisect(std::ostream& out, const nlohmann::json& doc);

}  // namespace hd::kinds::bisect
