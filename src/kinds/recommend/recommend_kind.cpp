#include "kinds/recommend/recommend_kind.h"

#include "errors.h"
#include "kinds/recommend/recommend_view.h"

namespace hd::kinds {

void RecommendKind::print(std::ostream& out, const report::LoadedResult& l) const { report::print_recommend(out, l); }

report::AddRows RecommendKind::add_rows() const { return report::add_recommend_rows; }

void RecommendKind::verify(const std::string& path, const run::VerifyOptions& options,
                      const ProgressFn& progress) const {
  if (!options.input.empty())
    throw InputError("a recommendation reads its texts from the files it names; verify takes no "
                     "input");
  run::recommend_verify(path, options.force, progress);
}

std::unique_ptr<const RunKind> make_recommend_kind() { return std::make_unique<RecommendKind>(); }

}  // namespace hd::kinds
