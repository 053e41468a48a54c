#include "kinds/registry.h"

#include "errors.h"
#include "run/shard.h"
#include "store/experiment.h"
#include "store/experiment_kind.h"

namespace hd::kinds {

// The registration: every kind this build knows, one name each, in the order --help lists
// their commands. Each name's folder (src/kinds/<name>/) defines make_<name>_kind().
#define HD_KINDS(X) X(diff) X(sweep) X(floor) X(server_floor) X(generate) X(recommend) X(length_curve) X(check) X(bisect) X(echo)

#define HD_DECLARE_KIND(name) std::unique_ptr<const RunKind> make_##name##_kind();
HD_KINDS(HD_DECLARE_KIND)

const std::vector<std::unique_ptr<const RunKind>>& run_kinds() {
  static const std::vector<std::unique_ptr<const RunKind>> kinds = [] {
    std::vector<std::unique_ptr<const RunKind>> v;
#define HD_MAKE_KIND(name) v.push_back(make_##name##_kind());
    HD_KINDS(HD_MAKE_KIND)
    return v;
  }();
  return kinds;
}

const RunKind* kind_named(std::string_view name) {
  for (const auto& k : run_kinds()) {
    if (k->name() == name) return k.get();
  }
  return nullptr;
}

const RunKind& form_kind() {
  for (const auto& k : run_kinds()) {
    if (k->runs_from_form()) return *k;
  }
  throw RuntimeError("no registered kind runs from serve's form");
}

const RunKind& kind_of(const store::Experiment& e) {
  const std::string name = store::kind_name(e);
  if (const RunKind* k = kind_named(name)) return *k;
  throw InputError("'" + e.path() + "' holds an experiment of kind '" + name +
                   "', which this heterodyne does not know (a newer version wrote it?)");
}

const RunKind& kind_of_file(const std::string& path) {
  return kind_of(store::Experiment::open(path, false));
}

void require_kind(const store::Experiment& e, std::string_view name) {
  if (const RunKind& is = kind_of(e); is.name() != name) {
    throw InputError("'" + e.path() + "' is a " + std::string(is.name()) + ", not a " +
                     std::string(name));
  }
}

std::optional<store::Experiment> open_to_resume(const std::string& path, std::string_view name,
                                                const ProgressFn& progress) {
  store::Experiment e = store::Experiment::open(path, true);
  e.stored_config();  // "holds no run" for a file stopped before its configuration
  require_kind(e, name);
  if (e.sealed()) {
    progress("'" + path + "' is already complete");
    return std::nullopt;
  }
  // A part of a sharded run: from here on (its arms and workers are made after this) every
  // allowed CPU, as when the part was started (run/shard.h, engine/threads.h).
  run::stored_shard(e);
  return e;
}

void add_kind_commands(CLI::App& app, cli::Context& ctx) {
  for (const auto& k : run_kinds()) {
    k->add_command(app, ctx);
    if (k->hidden()) app.get_subcommand(std::string(k->name()))->group("");
  }
}

int verify(const std::string& path, const run::VerifyOptions& options,
           const ProgressFn& progress) {
  const RunKind* kind = nullptr;
  {
    const store::Experiment e = store::Experiment::open(path, false);
    kind = &kind_of(e);
    run::check_integrity(e, progress);
  }
  if (options.integrity_only) return 0;
  kind->verify(path, options, progress);
  return 0;
}

}  // namespace hd::kinds
