// What show, --json, the report and the page read of a generate run: the summary stored when it
// finishes (meta "generate"), computed from the stored rows alone so that a resumed or verified
// run gives the same; and, added on reading, every prompt's completions, parting and transplant.
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "kinds/generate/generate.h"
#include "report/stored_result.h"

namespace hd::store {
class Experiment;
}

namespace hd::kinds {

// `no_transplants`: why none ran ("" where they did).
nlohmann::json generate_summary(const store::Experiment& e, const GenerateConfig& c,
                                const std::string& no_transplants);
// Adds "prompts": per prompt its text, both arms' completions as token texts, each of B's
// trials' parting, the top-5 and margins at the first parting, and its transplant.
void add_generate_prompts(const store::Experiment& e, nlohmann::json& result);
void print_generate(std::ostream& out, const report::LoadedResult& l);

}  // namespace hd::kinds
