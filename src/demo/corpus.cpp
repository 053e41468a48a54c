#include "demo/corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "build_info.h"
#include "common/sha256.h"
#include "demo/vocabulary.h"
#include "errors.h"

namespace hd::demo {
namespace fs = std::filesystem;
namespace {

constexpr uintmax_t kMaxFileBytes = 256 * 1024;

bool wanted_extension(const fs::path& p) {
  static const std::set<std::string> kExt = {".c",  ".cc", ".cpp", ".h",    ".hpp",
                                             ".py", ".md", ".sh",  ".cmake"};
  return kExt.count(p.extension().string()) > 0;
}

bool skipped_directory(const std::string& name) {
  static const std::set<std::string> kSkip = {
      ".git", "models", "__pycache__",  "site-packages", "dist-packages",
      "test", "tests",  "node_modules", "idlelib",       "build"};
  return kSkip.count(name) > 0;
}

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    if (c < 0x80) {
      if (c == 0) return false;
      n = 1;
    } else if ((c >> 5) == 0x6 && c >= 0xc2) {
      n = 2;
    } else if ((c >> 4) == 0xe) {
      n = 3;
    } else if ((c >> 3) == 0x1e && c <= 0xf4) {
      n = 4;
    } else {
      return false;
    }
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    }
    i += n;
  }
  return true;
}

struct Candidate {
  std::string order;  // sha256 of the relative path: a stable shuffle
  fs::path path;
};

std::vector<Candidate> candidates(const std::vector<std::string>& roots) {
  std::vector<Candidate> out;
  for (const std::string& root : roots) {
    std::error_code ec;
    if (!fs::is_directory(root, ec)) throw InputError("corpus directory " + root + " not found");
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
    if (ec) throw InputError("cannot read corpus directory " + root + ": " + ec.message());
    for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      const fs::directory_entry& e = *it;
      if (e.is_directory(ec)) {
        if (skipped_directory(e.path().filename().string())) it.disable_recursion_pending();
        continue;
      }
      if (!e.is_regular_file(ec) || !wanted_extension(e.path())) continue;
      if (e.file_size(ec) > kMaxFileBytes || ec) continue;
      out.push_back({sha256_bytes(fs::relative(e.path(), root).generic_string()), e.path()});
    }
  }
  std::sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    return a.order != b.order ? a.order < b.order : a.path < b.path;
  });
  return out;
}

bool read_usable(const fs::path& p, std::string& text) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  text = ss.str();
  if (text.empty() || !valid_utf8(text) || text.find(kSpaceMarker) != std::string::npos) {
    return false;
  }
  if (text.back() != '\n') text += '\n';
  return true;
}

}  // namespace

std::vector<std::string> default_corpus_roots() {
  std::vector<std::string> roots = {hd::build::kLlamaSource};
  std::vector<std::pair<int, std::string>> pythons;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/usr/lib", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("python3.", 0) != 0 || !fs::is_regular_file(e.path() / "os.py", ec)) continue;
    try {
      pythons.emplace_back(std::stoi(name.substr(8)), e.path().string());
    } catch (const std::exception&) {
    }
  }
  if (!pythons.empty()) roots.push_back(std::max_element(pythons.begin(), pythons.end())->second);
  return roots;
}

Corpus gather_corpus(const CorpusSettings& settings) {
  if (settings.held_out_every < 2) throw InputError("held_out_every must be at least 2");
  Corpus c;
  for (const Candidate& cand : candidates(settings.roots)) {
    // The first hex digit pair of the path hash picks the held-out files.
    const bool held =
        std::stoi(cand.order.substr(0, 2), nullptr, 16) % settings.held_out_every == 0;
    std::string& dst = held ? c.held_out : c.train;
    const size_t cap = held ? settings.max_held_out_bytes : settings.max_train_bytes;
    if (dst.size() >= cap) {
      if (c.train.size() >= settings.max_train_bytes &&
          c.held_out.size() >= settings.max_held_out_bytes) {
        break;
      }
      continue;
    }
    std::string text;
    if (!read_usable(cand.path, text)) continue;
    dst += text;
    ++(held ? c.held_out_files : c.train_files);
  }
  if (c.train.empty() || c.held_out.empty()) {
    throw InputError("no usable source files for the demo corpus under the given directories");
  }
  Sha256 h;
  h.update(c.train);
  h.update(std::string_view("\0", 1));
  h.update(c.held_out);
  c.sha256 = h.hex();
  return c;
}

}  // namespace hd::demo
