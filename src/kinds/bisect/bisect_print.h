// A stored bisect as `show` prints it: the line of candidates with each probe's figures against
// its floor, the first that differs marked, and where its numbers part from the good build's.
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

namespace hd::kinds::bisect {

void print_bisect(std::ostream& out, const nlohmann::json& doc);

// A commit subject or a reason as a terminal may print it: control characters (an escape
// sequence in an attacker's commit subject) shown as '?'.
std::string printable(std::string s);

}  // namespace hd::kinds::bisect
