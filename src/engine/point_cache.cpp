#include "engine/point_cache.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "build_info.h"
#include "common/cache_dir.h"
#include "common/sha256.h"
#include "engine/system.h"

namespace hd::engine {

namespace {

// Raise it with any change to what the survey proves or how (point_survey.cpp, points.cpp).
constexpr int kSurveyRevision = 1;

}  // namespace

std::filesystem::path survey_slot(const std::string& model_path) {
  const std::string identity = sha256_file(model_path) + "\n" + build::kLlamaCommit + "\n" +
                               build::kLlamaFlags + "\n" + build::kVersion + "\n" +
                               std::to_string(kSurveyRevision) + "\n" + cpu_features();
  return cache_dir() / "points" / (sha256_bytes(identity) + ".json");
}

std::optional<PointMap> kept_survey(const std::filesystem::path& slot) {
  std::ifstream in(slot);
  if (!in) return std::nullopt;
  try {
    return point_map_from_json(nlohmann::json::parse(in));
  } catch (const std::exception&) {
    return std::nullopt;  // damaged or of another layout: survey again
  }
}

void keep_survey(const std::filesystem::path& slot, const PointMap& map) {
  std::error_code ec;
  std::filesystem::create_directories(slot.parent_path(), ec);
  const std::filesystem::path tmp = slot.string() + ".tmp-" + std::to_string(getpid());
  bool written = false;
  {
    std::ofstream out(tmp);
    out << to_json(map).dump();
    written = static_cast<bool>(out.flush());
  }
  // Renamed whole or not at all, for a run beside this one; a temporary never stays behind.
  if (written) std::filesystem::rename(tmp, slot, ec);
  if (!written || ec) std::filesystem::remove(tmp, ec);
}

}  // namespace hd::engine
