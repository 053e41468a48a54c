// `heterodyne calibrate`, the CI gate's tolerances for a reference made by `capture`: rerun the
// reference's own arm in ways that must not matter (another ubatch split, another thread
// count); per tap atol = max(safety * max observed |Δ|, jitter_floor * max |ref|), each with how
// it was derived -> <ref>/tolerances.json, which `check` (kinds/check/) reads.
#pragma once
#include <nlohmann/json.hpp>
#include <string>


namespace hd::run {

struct CalibrateConfig {
  std::string reference;
  double safety = 2.0;
  double jitter_floor = 1e-3;  // relative to each tap's max |ref|
  bool force = false;          // replace an existing tolerances.json
};

// Writes <reference>/tolerances.json and returns it. InputError for a missing reference.
nlohmann::json calibrate_reference(const CalibrateConfig& config);

}  // namespace hd::run
