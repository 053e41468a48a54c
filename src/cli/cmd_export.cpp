// heterodyne export run.hdy [--table positions|layers|transplants|flips] [--format csv|jsonl]
//                  [-o FILE|-] [--force]
#include <algorithm>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "common/output_file.h"
#include "errors.h"
#include "kinds/views.h"
#include "report/export.h"
#include "store/experiment.h"

namespace hd::cli {

void add_export(CLI::App& app, Context& ctx) {
  struct Opts {
    std::string file, table, format = "csv", out = "-";
    bool positions = false, force = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd =
      app.add_subcommand("export", "write one table of stored rows as CSV or JSON lines");
  cmd->add_option("file", o->file, "experiment file (a diff)")->required();
  std::string names;
  for (const auto& n : report::export_tables()) names += (names.empty() ? "" : " | ") + n;
  cmd->add_option("--table", o->table,
                  names + " (default positions; columns: docs/experiment-format.md)");
  cmd->add_flag("--positions", o->positions, "the same as --table positions");
  cmd->add_option("--format", o->format, "csv or jsonl")->capture_default_str();
  cmd->add_option("-o,--output", o->out, "write here ('-': standard output, the default)");
  cmd->add_flag("--force", o->force, "replace an existing output file");
  cmd->callback([o, &ctx] {
    if (o->positions && !o->table.empty() && o->table != "positions") {
      throw InputError("--positions is --table positions: give one of them, not --table " +
                       o->table + " too");
    }
    const std::string table = o->table.empty() ? "positions" : o->table;
    const auto& known = report::export_tables();
    if (std::find(known.begin(), known.end(), table) == known.end()) {
      std::string one_of;
      for (size_t i = 0; i < known.size(); ++i) {
        one_of += (i == 0 ? "" : i + 1 == known.size() ? " or " : ", ") + known[i];
      }
      throw InputError("--table must be " + one_of + ", not '" + table + "'");
    }
    if (o->format != "csv" && o->format != "jsonl") {
      throw InputError("--format must be csv or jsonl, not '" + o->format + "'");
    }
    const OutputPolicy policy{o->force, {o->file}};
    if (!is_stdout(o->out)) check_output_path(o->out, policy);
    const report::Loaded l = kinds::load_positions(o->file);
    if (is_stdout(o->out)) {
      report::export_table(std::cout, l, table, o->format);
    } else {
      // Written whole, then moved into place: a failed export never leaves half a file.
      std::ostringstream rows;
      report::export_table(rows, l, table, o->format);
      write_output_file(o->out, rows.view(), policy);
    }
    // Once nothing can fail: an error is then the one line on stderr.
    if (l.integrity == store::kIntegrityMismatch) progress_line(store::integrity_warning(o->file));
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
