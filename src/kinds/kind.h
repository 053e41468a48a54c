// An experiment kind: what a file of that kind holds, the command that writes (and with
// --resume finishes) it, how show, show --json, report, serve's list and result page read it,
// how verify re-runs it and, for a kind that shards, how merge joins its parts. Every layer
// that treats kinds differently finds them here (registry.h); a kind is one folder
// (src/kinds/<name>/) and one line in registry.cpp, plus its web view (web/src/kind_<name>.ts).
// docs/extending.md has a worked example.
#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/progress.h"
#include "kinds/catalog_entry.h"
#include "kinds/command_line/command_line.h"
#include "kinds/views.h"
#include "report/export.h"
#include "run/merge.h"
#include "run/verify.h"

namespace hd::store {
class Experiment;
}

namespace hd::kinds {

class RunKind {
 public:
  virtual ~RunKind() = default;
  // Lower case and '-': the file's meta "kind" and the command that writes it.
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;  // one line, for --help
  // Not listed by --help (an example kind, not a measurement anyone needs).
  virtual bool hidden() const { return false; }

  // Registers the command on `app` (its flags, its callback).
  virtual void add_command(CLI::App& app, cli::Context& ctx) const = 0;

  // show FILE, with or without --json: InputError for a flag the kind does not answer.
  virtual Shown show(const std::string& path, const ShowRequest& request) const = 0;
  // The document report embeds and serve's result page draws ({kind, text, <name>: {...}}).
  virtual nlohmann::json document(const std::string& path) const = 0;
  // serve's list: its kind, status, models and headline numbers (views.h adds `positions`,
  // serve the name and time).
  virtual CatalogEntry catalog_entry(const std::string& path) const = 0;
  // verify FILE after its integrity check: re-runs it, RuntimeError at the first difference.
  virtual void verify(const std::string& path, const run::VerifyOptions& options,
                      const ProgressFn& progress) const = 0;
  // Whether its file holds the per-position rows of two arms (the store's chunk tables) that
  // export, show --worst, the compare page and serve's token view read (report/show.h).
  virtual bool holds_positions() const { return false; }
  // The tables `export` writes of a file of this kind that holds no per-position rows, the
  // default first; none: export refuses such a file (show prints it).
  virtual std::vector<std::string> export_tables() const { return {}; }
  // One of them, read from the file at `path` (InputError for a damaged file).
  virtual report::KindRows export_rows(const std::string& path, const std::string& table) const {
    (void)path;
    return {{table}, {}, {}};
  }
  // Non-null for a kind whose runs shard (--shard K/N, slurm, merge). Its command must honour
  // ctx.plan_only (check its flags, run nothing): slurm parses a task's flags with it first.
  virtual const run::Sharding* sharding() const { return nullptr; }
  // Whether serve's run form (POST /api/runs, serve/run_form.h) starts this kind: the form's
  // fields are its flags (--a, --b or --b-quant, each arm's settings, -f, --chunk,
  // --max-chunks, --transplants, --components). One kind does (form_kind()).
  virtual bool runs_from_form() const { return false; }
};

}  // namespace hd::kinds
