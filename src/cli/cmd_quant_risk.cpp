// heterodyne quant-risk --reference ref/ --bits 8|4 [--format human|json]
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.h"
#include "run/quant_risk.h"

namespace hd::cli {
namespace {

std::string number_text(const nlohmann::json& x, const char* spec) {
  if (x.is_string()) return x.get<std::string>();
  if (x.is_null()) return "-";
  return fmt::format(fmt::runtime(spec), x.get<double>());
}

void print_quant_risk(const nlohmann::json& r) {
  std::cout << fmt::format("int{} round-to-nearest, symmetric; error = mean over channels of "
                           "mean |q - x| / mean |x|\n\n",
                           r["bits"].get<int>());
  std::cout << fmt::format("{:<16} {:>10} {:>14} {:>12} {:>12} {:>8}\n", "tap", "abs max",
                           "channel conc.", "per-tensor", "per-channel", "ratio");
  for (const auto& t : r["taps"]) {
    std::cout << fmt::format("{:<16} {:>10.4g} {:>14} {:>12.4g} {:>12.4g} {:>8}\n",
                             t["name"].get<std::string>(), t["abs_max"].get<double>(),
                             number_text(t["channel_concentration"], "{:.3g}"),
                             t["error_per_tensor"].get<double>(),
                             t["error_per_channel"].get<double>(), number_text(t["ratio"], "{:.3g}"));
  }
  std::cout << "\nworst with one scale per tensor: " << r["worst_per_tensor"].get<std::string>()
            << "; most helped by per-channel scales: " << r["worst_ratio"].get<std::string>()
            << "\n";
}

}  // namespace

void add_quant_risk(CLI::App& app, Context& ctx) {
  struct Opts {
    std::string reference, format = "human";
    int bits = 8;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "quant-risk", "how much int8/int4 activation quantization would hurt each stored tap");
  cmd->add_option("--reference", o->reference, "directory written by capture")->required();
  cmd->add_option("--bits", o->bits, "8 or 4")->required()->check(CLI::IsMember({8, 4}));
  cmd->add_option("--format", o->format, "human | json")
      ->check(CLI::IsMember({"human", "json"}))
      ->capture_default_str();
  cmd->callback([o, &ctx] {
    const auto r = run::reference_quant_risk(o->reference, o->bits);
    if (o->format == "json") {
      std::cout << r.dump(2) << "\n";
    } else {
      print_quant_risk(r);
    }
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
