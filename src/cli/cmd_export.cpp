// heterodyne export run.hdy [--table positions|layers|transplants|flips] [--format csv|jsonl]
//                  [-o FILE|-] [--force]
#include <algorithm>
#include <functional>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "common/output_file.h"
#include "errors.h"
#include "kinds/registry.h"
#include "kinds/views.h"
#include "report/export.h"
#include "store/experiment.h"

namespace hd::cli {

namespace {

// "a, b or c".
std::string one_of(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return s;
}

// `write`'s rows to standard output as they come, or to `out` written whole and then moved into
// place: a failed export never leaves half a file.
void write_export(const std::string& out, const OutputPolicy& policy,
                  const std::function<void(std::ostream&)>& write) {
  if (is_stdout(out)) {
    write(std::cout);
    return;
  }
  std::ostringstream rows;
  write(rows);
  write_output_file(out, rows.view(), policy);
}

// A kind's own tables (a generate run's prompts and tokens): export writes them as it writes a
// diff's, the first the default; a kind without any is refused as before (show prints it).
int export_kind_rows(const kinds::RunKind& kind, const std::string& file, std::string table,
                     bool positions, const std::string& format, const std::string& out,
                     const OutputPolicy& policy) {
  const std::vector<std::string> names = kind.export_tables();
  if (names.empty()) (void)kinds::load_positions(file);  // its refusal, naming the kinds that do
  if (positions) {
    throw InputError("--positions is for diffs: '" + file + "' is a " + std::string(kind.name()) +
                     ", whose tables are " + one_of(names));
  }
  if (table.empty()) table = names.front();
  if (std::find(names.begin(), names.end(), table) == names.end()) {
    throw InputError("'" + file + "' is a " + std::string(kind.name()) + ": --table must be " +
                     one_of(names) + ", not '" + table + "'");
  }
  if (!is_stdout(out)) check_output_path(out, policy);
  const report::KindRows rows = kind.export_rows(file, table);
  write_export(out, policy, [&](std::ostream& os) { report::write_kind_rows(os, rows, format); });
  // Once nothing can fail: an error is then the one line on stderr.
  if (rows.integrity == store::kIntegrityMismatch) progress_line(store::integrity_warning(file));
  return 0;
}

}  // namespace

void add_export(CLI::App& app, Context& ctx) {
  struct Opts {
    std::string file, table, format = "csv", out = "-";
    bool positions = false, force = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd =
      app.add_subcommand("export", "write one table of stored rows as CSV or JSON lines");
  cmd->add_option("file", o->file, "experiment file (a diff, or a generate run: --table prompts | tokens)")
      ->required();
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
    if (o->format != "csv" && o->format != "jsonl") {
      throw InputError("--format must be csv or jsonl, not '" + o->format + "'");
    }
    const OutputPolicy policy{o->force, {o->file}};
    if (const kinds::RunKind& kind = kinds::kind_of_file(o->file); !kind.holds_positions()) {
      ctx.exit_code = export_kind_rows(kind, o->file, o->table, o->positions, o->format, o->out, policy);
      return;
    }
    const std::string table = o->table.empty() ? "positions" : o->table;
    const auto& known = report::export_tables();
    if (std::find(known.begin(), known.end(), table) == known.end())
      throw InputError("--table must be " + one_of(known) + ", not '" + table + "'");
    if (!is_stdout(o->out)) check_output_path(o->out, policy);
    const report::Loaded l = kinds::load_positions(o->file);
    write_export(o->out, policy, [&](std::ostream& os) { report::export_table(os, l, table, o->format); });
    // Once nothing can fail: an error is then the one line on stderr.
    if (l.integrity == store::kIntegrityMismatch) progress_line(store::integrity_warning(o->file));
    ctx.exit_code = 0;
  });
}

}  // namespace hd::cli
