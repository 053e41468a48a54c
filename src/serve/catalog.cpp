#include "serve/catalog.h"

#include "store/experiment.h"

#include <algorithm>
#include <chrono>

#include "engine/gguf_file.h"
#include "kinds/views.h"

namespace hd::serve {
namespace fs = std::filesystem;
namespace {

constexpr int kMaxDepth = 6;  // a models folder is a few levels deep, not a whole disk

template <typename F>
void walk(const Sandbox& box, F&& visit) {
  std::error_code ec;
  fs::recursive_directory_iterator it(box.root(), fs::directory_options::skip_permission_denied,
                                      ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it.depth() > kMaxDepth) {
      it.disable_recursion_pending();
      continue;
    }
    std::error_code fec;
    if (!it->is_regular_file(fec)) continue;
    // Symlinks that lead outside the root are not listed (nor served: Sandbox::resolve).
    const auto real = box.resolve(box.relative(it->path()));
    if (real) visit(*real, box.relative(it->path()));
  }
}

}  // namespace

const std::vector<std::string>& form_quant_types() {
  static const std::vector<std::string> kTypes = {"Q8_0",   "Q6_K",   "Q5_K_M", "Q5_0",
                                                  "Q4_K_M", "Q4_K_S", "Q4_0",   "Q3_K_M",
                                                  "Q2_K",   "IQ4_NL", "F16",    "BF16"};
  return kTypes;
}

nlohmann::json list_models(const Sandbox& models) {
  nlohmann::json out = nlohmann::json::array();
  walk(models, [&](const fs::path& real, const std::string& rel) {
    if (real.extension() != ".gguf") return;
    try {
      const engine::GgufSummary s = engine::gguf_check(real.string());
      out.push_back({{"path", rel},
                     {"name", s.name},
                     {"architecture", s.architecture},
                     {"params", s.n_params},
                     {"file_type", s.weight_type},
                     {"size", s.file_size}});
    } catch (const std::exception&) {
      // not a usable model (vocabulary-only GGUF, unsupported architecture, truncated): skip
    }
  });
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a["path"] < b["path"]; });
  return out;
}

nlohmann::json list_texts(const Sandbox& models) {
  nlohmann::json out = nlohmann::json::array();
  walk(models, [&](const fs::path& real, const std::string& rel) {
    const std::string ext = real.extension().string();
    if (ext != ".txt" && ext != ".md") return;
    std::error_code ec;
    out.push_back({{"path", rel}, {"size", fs::file_size(real, ec)}});
  });
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a["path"] < b["path"]; });
  return out;
}

// A file's catalog line, its paths as serve shows them; nullopt for what is not an experiment
// (or a file being created).
static std::optional<nlohmann::json> catalog_line(const fs::path& real, const std::string& name,
                                                  const PublicPaths& paths) {
  try {
    kinds::CatalogEntry entry = kinds::catalog_entry(real.string());
    // Every path in it as serve shows paths (B named by its quantization type has none).
    entry.a = paths.text(entry.a);
    entry.b = paths.text(entry.b);
    std::error_code tec;
    const auto mtime =
        std::chrono::file_clock::to_sys(fs::last_write_time(real, tec)).time_since_epoch();
    entry.name = name;
    entry.modified = std::chrono::duration_cast<std::chrono::seconds>(mtime).count();
    return record_json(entry);  // JSON at the edge: HTTP
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// A run killed or cancelled does not change its file: whether it is still running is asked of
// the writer's lock on every listing, not kept with the line.
static nlohmann::json with_live_status(nlohmann::json line, const fs::path& real) {
  // The file said "running" when the line was read ("stopped" is what that read as then).
  const std::string status = line.value("status", "");
  if (status == "running" || status == "stopped") {
    line["status"] = store::Experiment::live_status("running", real.string());
  }
  return line;
}

nlohmann::json ExperimentList::list(const Sandbox& experiments, const PublicPaths& paths) {
  nlohmann::json out = nlohmann::json::array();
  std::map<std::string, std::pair<FileStamp, nlohmann::json>> seen;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(experiments.root(), ec)) {
    if (e.path().extension() != ".hdy") continue;
    const auto real = experiments.resolve(e.path().filename().string());
    const auto stamp = real ? stamp_of(*real) : std::nullopt;
    if (!stamp) continue;
    const std::string name = e.path().stem().string();
    const std::string key = real->string() + "\n" + name;  // a symlink lists under its own name
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (const auto it = lines_.find(key); it != lines_.end() && it->second.first == *stamp) {
        seen.insert(*it);
        out.push_back(with_live_status(it->second.second, *real));
        continue;
      }
    }
    // What cannot be read now (a file being created, a busy database, not an experiment) is
    // tried again on the next request, not remembered.
    const auto line = catalog_line(*real, name, paths);
    if (!line) continue;
    seen[key] = {*stamp, *line};
    out.push_back(*line);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    lines_ = std::move(seen);  // files gone are forgotten
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a["modified"] > b["modified"]; });
  return out;
}

}  // namespace hd::serve
