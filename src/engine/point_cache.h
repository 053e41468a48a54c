// Surveys kept: the point map of a file this build and CPU already surveyed.
//
// The survey (point_survey.h) costs about 2 × (n_layer + 1) passes of 8 tokens, each reading
// every weight: seconds on a 0.6B model, half a minute on a 3B one, before every diff. Its
// result depends only on the file's bytes, the llama.cpp build, the survey's code and the CPU
// it ran on, so it is kept under <cache>/points/, named by the SHA-256 of all four: a map kept
// is a proof made on this very file. A kept file that does not read as a map is surveyed again.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "engine/points.h"

namespace hd::engine {

// Where the survey of `model_path` is kept (it hashes the file: compute it once per survey).
std::filesystem::path survey_slot(const std::string& model_path);

std::optional<PointMap> kept_survey(const std::filesystem::path& slot);

// Best effort: a cache that cannot be written costs the next run a survey, nothing else.
void keep_survey(const std::filesystem::path& slot, const PointMap& map);

}  // namespace hd::engine
