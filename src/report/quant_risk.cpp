#include "report/quant_risk.h"

#include <fmt/format.h>

namespace hd::report {

static std::string number_text(const nlohmann::json& x, const char* spec) {
  if (x.is_string()) return x.get<std::string>();
  if (x.is_null()) return "-";
  return fmt::format(fmt::runtime(spec), x.get<double>());
}

void print_quant_risk(std::ostream& os, const nlohmann::json& r) {
  os << fmt::format(
      "int{} round-to-nearest, symmetric; error = mean over channels of "
      "mean |q - x| / mean |x|\n\n",
      r["bits"].get<int>());
  os << fmt::format("{:<16} {:>10} {:>14} {:>12} {:>12} {:>8}\n", "tap", "abs max", "channel conc.",
                    "per-tensor", "per-channel", "ratio");
  for (const auto& t : r["taps"]) {
    os << fmt::format("{:<16} {:>10.4g} {:>14} {:>12.4g} {:>12.4g} {:>8}\n",
                      t["name"].get<std::string>(), t["abs_max"].get<double>(),
                      number_text(t["channel_concentration"], "{:.3g}"),
                      t["error_per_tensor"].get<double>(), t["error_per_channel"].get<double>(),
                      number_text(t["ratio"], "{:.3g}"));
  }
  os << "\nworst with one scale per tensor: " << r["worst_per_tensor"].get<std::string>()
     << "; most helped by per-channel scales: " << r["worst_ratio"].get<std::string>() << "\n";
}

}  // namespace hd::report
