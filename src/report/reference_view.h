// A gate reference (`capture -o ref/`, docs/gate.md) as a page: `report ref/ [--check
// result.json]`. The document lists every tap of the manifest with its tolerance from
// calibrate (when there is one) and, given a `check --json-out` file, that check's result.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace hd::report {

// A directory holding a manifest.json: what `report` reads as a reference.
bool is_reference_dir(const std::string& path);

// {kind: "reference", path, status, integrity, text, text_title, reference: {model, settings,
// text, n_tokens, decode_steps, calibration, taps: [{name, step, shape, atol, derived_from,
// max_observed, ref_abs_max}], check}}. InputError for a directory that is not a reference, or
// a damaged file; for a check whose taps are not the reference's.
nlohmann::json reference_document(const std::string& dir, const std::string& check_path);

}  // namespace hd::report
