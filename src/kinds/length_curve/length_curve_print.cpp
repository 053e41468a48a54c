#include "kinds/length_curve/length_curve_print.h"

#include <fmt/format.h>

#include "kinds/arms_text.h"

namespace hd::kinds {

void print_length_curve(std::ostream& os, const nlohmann::json& r) {
  if (const std::string arms = arms_text(r.value("a", nlohmann::json()), r.value("b", nlohmann::json()));
      !arms.empty())
    os << arms << "\n";
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
