// heterodyne export run.hdy --positions --format csv|jsonl [-o FILE]
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "errors.h"
#include "report/export.h"

namespace hd::cli {

void add_export(CLI::App& app, Context& ctx) {
  struct Opts {
    std::string file, format = "csv", out;
    bool positions = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("export", "write stored rows as CSV or JSON lines");
  cmd->add_option("file", o->file, "experiment file")->required();
  cmd->add_flag("--positions", o->positions, "one row per position (the only table so far)");
  cmd->add_option("--format", o->format, "csv or jsonl")->capture_default_str();
  cmd->add_option("-o,--output", o->out, "write here instead of stdout");
  cmd->callback([o, &ctx] {
    if (!o->positions) throw InputError("export needs --positions");
    const report::Loaded l = report::load_experiment(o->file);
    if (o->out.empty()) {
      report::export_positions(std::cout, l, o->format);
    } else {
      std::ofstream f(o->out);
      if (!f) throw InputError("cannot write '" + o->out + "'");
      report::export_positions(f, l, o->format);
      if (!f.flush()) throw RuntimeError("writing '" + o->out + "' failed");
    }
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
