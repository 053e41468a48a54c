// A kind whose stored result is one summary in its meta table under the kind's name, written
// when the run finishes (report/stored_result.h): show prints it with the kind's `print`, --json
// and the report carry it as is, serve lists the run by its configuration. sweep, floor,
// recommend and the example kind are such kinds, each made of its parts here, with no class of
// its own.
#pragma once
#include <memory>
#include <ostream>

#include "kinds/kind.h"
#include "report/stored_result.h"

namespace hd::kinds {

// `add_command` gets the kind itself, for its name and description; `add_rows` adds the rows a
// kind keeps in tables of its own to the summary (null: none).
struct SummaryKindParts {
  std::string_view name, description;
  void (*add_command)(const RunKind& kind, CLI::App& app, cli::Context& ctx) = nullptr;
  void (*verify)(const std::string& path, const run::VerifyOptions& options,
                 const ProgressFn& progress) = nullptr;
  void (*print)(std::ostream& out, const report::LoadedResult& l) = nullptr;
  report::AddRows add_rows = nullptr;
  const run::Sharding* sharding = nullptr;  // null: its runs do not shard
  bool hidden = false;
  // Its tables for export (kind.h export_tables, export_rows): none by default.
  std::vector<std::string> export_tables = {};
  report::KindRows (*export_rows)(const std::string& path, const std::string& table) = nullptr;
};
std::unique_ptr<const RunKind> summary_kind(const SummaryKindParts& parts);

}  // namespace hd::kinds
