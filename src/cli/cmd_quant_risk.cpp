// heterodyne quant-risk --reference ref/ --bits 8|4 [--format human|json]
#include <iostream>

#include "cli/commands.h"
#include "report/quant_risk.h"
#include "run/quant_risk.h"

namespace hd::cli {

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
      report::print_quant_risk(std::cout, r);
    }
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
