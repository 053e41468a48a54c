// The generate kind's tables for `heterodyne export` (kinds/kind.h export_tables): "prompts"
// (one row per prompt and B's trial) and "tokens" (one row per generated token), the columns in
// generate_export.cpp and docs/experiment-format.md.
#pragma once
#include <string>
#include <vector>

#include "report/export.h"

namespace hd::kinds {

const std::vector<std::string>& generate_export_tables();
report::KindRows generate_export_rows(const std::string& path, const std::string& table);

}  // namespace hd::kinds
