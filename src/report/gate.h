// `heterodyne check`'s reports of a run::check_reference result: the verdict first, then the
// taps over their tolerance (every tap with all_taps), as a terminal table, Markdown for a
// pull-request comment, or JUnit XML (one test case per tap, always all of them).
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>

namespace hd::report {

// A number of a check's result as written (common/json_number.h): "inf" where a tap of the
// reference is zero and the candidate's is not; null (NaN) where nothing was compared.
double gate_number(const nlohmann::json& v);

void print_check(std::ostream& os, const nlohmann::json& r, bool all_taps);
void print_check_markdown(std::ostream& os, const nlohmann::json& r, bool all_taps);
void print_check_junit(std::ostream& os, const nlohmann::json& r);

}  // namespace hd::report
