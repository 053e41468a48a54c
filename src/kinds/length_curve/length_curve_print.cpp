#include "kinds/length_curve/length_curve_print.h"

#include <fmt/format.h>

namespace hd::kinds {

void print_length_curve(std::ostream& os, const nlohmann::json& r) {
  // Which arms: A's model, and each setting in which B differs from it.
  if (r.contains("a") && r["a"].is_object() && r.contains("b") && r["b"].is_object()) {
    // A setting at its default may be left out of either arm (a plain arm's server settings).
    std::string differs;
    auto side = [](const nlohmann::json& arm, const std::string& key) {
      return arm.contains(key) ? arm[key].dump() : std::string("the default");
    };
    nlohmann::json keys = r["b"];
    keys.update(r["a"]);
    for (const auto& [key, unused] : keys.items()) {
      if (r["a"].value(key, nlohmann::json()) != r["b"].value(key, nlohmann::json()))
        differs += fmt::format("{}{} {} (A: {})", differs.empty() ? "" : ", ", key,
                               side(r["b"], key), side(r["a"], key));
    }
    os << "A: " << r["a"].value("model", "") << "\n"
       << "B: " << (differs.empty() ? std::string("the same as A") : "A's, but " + differs)
       << "\n\n";
  }
  os << fmt::format("{:>8} {:>12} {:>12} {:>12} {:>12} {:>8}\n", "length", "rel err", "max |Δ|",
                    "mean KL", "max KL", "flips");
  // null: the model has no proven residual point (engine/point_survey.h), so none was measured.
  // "inf" (common/json_number.h): a KL where B masks a token A gives mass.
  auto cell = [](const nlohmann::json& v) {
    return v.is_null()     ? std::string("-")
           : v.is_string() ? v.get<std::string>()
                           : fmt::format("{:.4g}", v.get<double>());
  };
  for (const auto& row : r["rows"]) {
    os << fmt::format("{:>8} {:>12} {:>12} {:>12} {:>12} {:>8}\n", row["length"].get<int>(),
                      cell(row["rel_err"]), cell(row["max_abs"]), cell(row["mean_kl"]),
                      cell(row["max_kl"]), row["top1_flips"].get<int>());
  }
  os << "\nrel err = ||Δ|| / ||A|| of the last layer's residual over all positions; "
        "KL(A || B) per position\n";
}

}  // namespace hd::kinds
