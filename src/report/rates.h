// A rate as every view prints it (analysis::RateCI): show's tables, --json, the report and the
// web UI read these, so a rate never shows an interval outside [0, 1], a NaN, or a "± 0" that
// hides what was counted.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/stats.h"

namespace hd::report {

// "7.12 % (5.20–9.31)"; "0 of 1,204 positions" (nothing varied: no interval to give);
// "50.0 % (n/a: 1 chunk)"; "—" with nothing counted.
std::string rate_text(const analysis::RateCI& r, const char* unit = "positions");

// {"rate", "lo", "hi", "n", "chunks", "why", "text"}: lo and hi null, and why saying so, where
// there is no interval ("no variation: 0 of 1204 positions", "1 chunk"); never NaN.
nlohmann::json rate_json(const analysis::RateCI& r, const char* unit = "positions");

}  // namespace hd::report
