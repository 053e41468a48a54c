#include "report/gate.h"

#include <fmt/format.h>

#include <cmath>

namespace hd::report {
namespace {

// A number to `digits` significant digits: "inf" as is, "n/a" where there is none (a NaN in
// either tap: nothing to compare, and the tap is over), never "nan".
std::string shown(const nlohmann::json& v, int digits) {
  const double x = gate_number(v);
  if (std::isnan(x)) return "n/a";
  return digits == 3 ? fmt::format("{:.3g}", x) : fmt::format("{:.4g}", x);
}


std::string concentration_text(const nlohmann::json& c) {
  if (c.is_null()) return "-";
  if (c.is_string()) return c.get<std::string>();
  return fmt::format("{:.3g}", c.get<double>());
}

std::string heads_text(const nlohmann::json& heads_over) {
  std::string s;
  for (const auto& h : heads_over) {
    if (!s.empty()) s += ',';
    s += std::to_string(h.get<int>());
  }
  return s.empty() ? "-" : s;
}

size_t taps_over(const nlohmann::json& r) {
  size_t n = 0;
  for (const auto& t : r["taps"]) n += t["over"].get<bool>() ? 1 : 0;
  return n;
}

// "5 of 18 taps over their tolerance"
std::string over_count(const nlohmann::json& r) {
  return fmt::format("{} of {} taps over their tolerance", taps_over(r), r["taps"].size());
}

// "first divergent head: kqv_out-0, heads 1,3 over; worst head 3, concentration 12.5"
std::string first_head_line(const nlohmann::json& r) {
  if (!r.contains("first_divergent_head")) return "";
  const auto& h = r["first_divergent_head"];
  if (h.is_null()) return "no head over its tap's tolerance";
  return fmt::format(
      "first layer with a divergent head: {} (layer {}), heads {} over; worst head "
      "{}, concentration {}",
      h["tap"].get<std::string>(), h["layer"].get<int>(), heads_text(h["heads_over"]),
      h["worst_head"].get<int>(), concentration_text(h["concentration"]));
}

void print_heads(std::ostream& os, const nlohmann::json& r, bool all_taps) {
  if (r["per_head"].empty()) return;
  std::string rows;
  for (const auto& h : r["per_head"]) {
    if (!all_taps && h["heads_over"].empty()) continue;
    rows += fmt::format("{:<20} {:>6} {:>12} {:>12} {:>14}  {}\n", h["tap"].get<std::string>(),
                        h["worst_head"].get<int>(), shown(h["max_abs"][h["worst_head"].get<size_t>()], 4),
                        shown(h["median"], 4), concentration_text(h["concentration"]),
                        heads_text(h["heads_over"]));
  }
  if (!rows.empty()) {
    os << fmt::format("\n{:<20} {:>6} {:>12} {:>12} {:>14}  {}\n", "attention (per head)", "worst",
                      "max |Δ|", "median", "concentration", "heads over")
       << rows;
  }
  os << "\n" << first_head_line(r) << "\n";
}

}  // namespace

double gate_number(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>() == "-inf" ? -INFINITY : INFINITY;
  return v.is_number() ? v.get<double>() : NAN;
}


void print_check(std::ostream& os, const nlohmann::json& r, bool all_taps) {
  const bool passed = r["passed"].get<bool>();
  if (passed) {
    os << fmt::format("passed: every tap within its tolerance ({} taps{})\n", r["taps"].size(),
                      all_taps ? "" : "; --all-taps lists them");
  } else {
    os << "FAILED: first divergent tap " << r["first_divergent_tap"].get<std::string>() << "; "
       << over_count(r) << "\n";
  }
  if (all_taps || !passed) {
    os << fmt::format("\n{:<22} {:>12} {:>12} {:>10} {:>12}  {}\n", "tap", "max |Δ|", "mean |Δ|",
                      "rel err", "tolerance", "");
    for (const auto& t : r["taps"]) {
      const bool over = t["over"].get<bool>();
      if (!over && !all_taps) continue;
      os << fmt::format("{:<22} {:>12} {:>12} {:>10} {:>12}  {}\n", t["name"].get<std::string>(),
                        shown(t["max_abs"], 4), shown(t["mean_abs"], 4), shown(t["rel_err"], 3),
                        shown(t["tolerance"], 4), over ? "OVER" : "");
    }
  }
  print_heads(os, r, all_taps);
}

// For a pull-request comment: a verdict line, then the taps as a table (over ones in bold).
void print_check_markdown(std::ostream& os, const nlohmann::json& r, bool all_taps) {
  const bool passed = r["passed"].get<bool>();
  os << (passed
             ? fmt::format("### heterodyne check: passed\n\nEvery tap ({}) is within its "
                           "tolerance.\n\n",
                           r["taps"].size())
             : "### heterodyne check: FAILED\n\nFirst divergent tap: **`" +
                   r["first_divergent_tap"].get<std::string>() + "`** (" + over_count(r) + ")\n\n");
  if (all_taps || !passed) {
    os << "| tap | max \\|Δ\\| | mean \\|Δ\\| | rel err | tolerance | "
          "|\n|---|---:|---:|---:|---:|---|\n";
    for (const auto& t : r["taps"]) {
      const bool over = t["over"].get<bool>();
      if (!over && !all_taps) continue;
      os << fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", t["name"].get<std::string>(),
                        shown(t["max_abs"], 4), shown(t["mean_abs"], 4), shown(t["rel_err"], 3),
                        shown(t["tolerance"], 4), over ? "**over**" : "");
    }
  }
  if (r.contains("first_divergent_head")) os << "\n" << first_head_line(r) << ".\n";
}

static std::string xml_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

// One test case per tap; a tap over its tolerance is a failure with its numbers.
void print_check_junit(std::ostream& os, const nlohmann::json& r) {
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  os << fmt::format("<testsuite name=\"heterodyne check\" tests=\"{}\" failures=\"{}\">\n",
                    r["taps"].size(), taps_over(r));
  for (const auto& t : r["taps"]) {
    const std::string name = xml_escape(t["name"].get<std::string>());
    os << fmt::format("  <testcase classname=\"heterodyne.check\" name=\"{}\"", name);
    if (!t["over"].get<bool>()) {
      os << "/>\n";
      continue;
    }
    os << fmt::format(
        ">\n    <failure message=\"max |delta| {} over tolerance {}\">mean |delta| {}, "
        "relative error {}</failure>\n  </testcase>\n",
        shown(t["max_abs"], 4), shown(t["tolerance"], 4), shown(t["mean_abs"], 4),
        shown(t["rel_err"], 3));
  }
  os << "</testsuite>\n";
}

}  // namespace hd::report
