// `heterodyne show` for a recommendation (kinds/recommend/recommend.h): the groups the recipe moves from
// the base, predicted against measured, and the held-out table beside the stock types.
#pragma once
#include <ostream>

#include "report/stored_result.h"

namespace hd::store {
class Experiment;
}

namespace hd::report {

void print_recommend(std::ostream& os, const LoadedResult& l);

// Adds the sensitivity rows (kinds/recommend/recommend_rows.h) to the summary as "sensitivity".
void add_recommend_rows(const store::Experiment& e, nlohmann::json& result);

}  // namespace hd::report
