// heterodyne export run.hdy --positions --format csv|jsonl [-o FILE|-] [--force]
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "common/output_file.h"
#include "errors.h"
#include "report/export.h"

namespace hd::cli {

void add_export(CLI::App& app, Context& ctx) {
  struct Opts {
    std::string file, format = "csv", out = "-";
    bool positions = false, force = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("export", "write stored rows as CSV or JSON lines");
  cmd->add_option("file", o->file, "experiment file")->required();
  cmd->add_flag("--positions", o->positions, "one row per position (the only table so far)");
  cmd->add_option("--format", o->format, "csv or jsonl")->capture_default_str();
  cmd->add_option("-o,--output", o->out, "write here ('-': standard output, the default)");
  cmd->add_flag("--force", o->force, "replace an existing output file");
  cmd->callback([o, &ctx] {
    if (!o->positions) throw InputError("export needs --positions");
    if (o->format != "csv" && o->format != "jsonl") {
      throw InputError("--format must be csv or jsonl, not '" + o->format + "'");
    }
    const OutputPolicy policy{o->force, {o->file}};
    if (!is_stdout(o->out)) check_output_path(o->out, policy);
    const report::Loaded l = report::load_experiment(o->file);
    if (is_stdout(o->out)) {
      report::export_positions(std::cout, l, o->format);
    } else {
      // Written whole, then moved into place: a failed export never leaves half a file.
      std::ostringstream rows;
      report::export_positions(rows, l, o->format);
      write_output_file(o->out, rows.view(), policy);
    }
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
