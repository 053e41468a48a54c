#include "kinds/floor/floor_kind.h"

#include "errors.h"
#include "kinds/floor/floor_view.h"
#include "kinds/floor/floor_rows.h"
#include "store/experiment.h"

namespace hd::kinds {

namespace {
// A floor keeps its rows in tables (floor_rows.h); files from before, in its summary.
void add_floor_rows(const store::Experiment& e, nlohmann::json& floor) {
  if (floor.contains("rows")) return;
  if (!store::has_floor_tables(e))
    throw InputError("'" + e.path() + "' is damaged: its floor tables are missing");
  floor.update(store::floor_groups_json(store::read_floor_groups(e)));
}
}  // namespace

void FloorKind::print(std::ostream& out, const report::LoadedResult& l) const { report::print_floor(out, l); }

report::AddRows FloorKind::add_rows() const { return add_floor_rows; }

void FloorKind::verify(const std::string& path, const run::VerifyOptions& options,
                      const ProgressFn& progress) const {
  run::floor_verify(path, options.force, progress, options.input);
}

std::unique_ptr<const RunKind> make_floor_kind() { return std::make_unique<FloorKind>(); }

}  // namespace hd::kinds
