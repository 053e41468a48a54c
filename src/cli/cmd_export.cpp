// heterodyne export run.hdy --positions --format csv|jsonl [-o FILE]
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "common/output_path.h"
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
    if (o->format != "csv" && o->format != "jsonl") {
      throw InputError("--format must be csv or jsonl, not '" + o->format + "'");
    }
    if (!o->out.empty()) {
      check_output_path(o->out);
      std::error_code ec;
      if (std::filesystem::equivalent(o->out, o->file, ec)) {
        throw InputError("refusing to export over the experiment file itself ('" + o->out + "')");
      }
    }
    const report::Loaded l = report::load_experiment(o->file);
    if (o->out.empty()) {
      report::export_positions(std::cout, l, o->format);
      return;
    }
    // A temporary file renamed into place: a failed export never leaves half a file behind.
    const std::string tmp = o->out + ".part-" + std::to_string(::getpid());
    {
      std::ofstream f(tmp);
      if (!f) throw InputError("cannot write '" + o->out + "'");
      report::export_positions(f, l, o->format);
      if (!f.flush()) {
        std::filesystem::remove(tmp);
        throw RuntimeError("writing '" + o->out + "' failed (disk full?)");
      }
    }
    std::filesystem::rename(tmp, o->out);
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
