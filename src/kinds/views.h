// What `show`, `show --json`, `report` and serve's result view draw of an experiment file: each
// kind's own view (kinds/kind.h), found by the file's kind. The commands call these functions
// and never look at the kind.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "report/show.h"
#include "kinds/catalog_entry.h"
#include "report/transplants.h"

namespace hd::kinds {

// show's flags. All but `json` are answered by diffs only.
using report::Position;

struct ShowRequest {
  bool json = false;
  int worst = 0;
  bool transplants = false, components = false, flips = false;
  // An analysis' show flag (ChunkAnalysis::shortcut: "routing", "lens"): its tables alone.
  std::string alone;
  std::optional<Position> position;
};

struct Shown {
  std::string text;       // what show prints: the human text, or the JSON
  bool modified = false;  // the file fails its integrity check (the caller warns)
};

// What show --json prints of `j`: indented, invalid UTF-8 replaced, a newline at the end.
std::string json_text(const nlohmann::json& j);

// `show FILE`. Nothing is printed here: an error half way leaves no partial output.
// InputError for a flag the file's kind does not answer.
Shown show_experiment(const std::string& path, const ShowRequest& request);

// A file's per-position rows (report/show.h), read by export, show of several files and
// serve's token view: InputError for a file of a kind without them ("'F' is a sweep, not one
// of the diffs").
report::Loaded load_positions(const std::string& path, bool position_rows = false);

// The document `report` embeds and serve's result view draws: a diff's result_json, or another
// kind's stored summary with `kind` and `text` (what show prints), which the page shows as is.
nlohmann::json result_document(const std::string& path);

// What `report a.hdy b.hdy …` embeds for its compare page: {kind: "compare", runs: [{name,
// result}]}, each run a diff's result_document under its file name. InputError for a file that
// is not a diff.
nlohmann::json compare_document(const std::vector<std::string>& paths);

// The files of a result or compare document whose integrity verdict is MISMATCH (changed after
// they were sealed), as the document names them: what `report` warns of on stderr.
std::vector<std::string> altered_files(const nlohmann::json& doc);

// A line of serve's experiment list: {kind, status, a, b (model paths, absolute)} and, for a
// diff, its headline numbers (kl_mean, kl_ci95, top1_change_rate, ppl_a, ppl_b, floor_kl_mean,
// n_chunks). InputError for a file that is not an experiment.
CatalogEntry catalog_entry(const std::string& path);

}  // namespace hd::kinds
