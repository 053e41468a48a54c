#include "kinds/bisect/bisect_candidates.h"

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>

#include "build_info.h"
#include "common/shell_quote.h"
#include "errors.h"
#include "kinds/bisect/bisect_search.h"

namespace fs = std::filesystem;

namespace hd::kinds::bisect {

nlohmann::json to_json(const Candidate& c) {
  nlohmann::json j = {{"name", c.name}};
  if (!c.release.empty()) j["release"] = c.release;
  if (!c.commit.empty()) j["commit"] = c.commit;
  if (!c.subject.empty()) j["subject"] = c.subject;
  return j;
}

Candidate candidate_from_json(const nlohmann::json& j) {
  return {j.at("name").get<std::string>(), j.value("release", ""), j.value("commit", ""),
          j.value("subject", "")};
}

std::string release_of(const std::string& spec) {
  static const std::string prefix = "npm:node-llama-cpp@";
  if (spec.rfind(prefix, 0) != 0) return "";
  const std::string v = spec.substr(prefix.size());
  return is_version(v) ? v : "";
}

namespace {
struct Ran {
  int status = 0;
  std::vector<std::string> lines;
};

// `command` through the shell, its standard output (and error, where `with_errors`: the scripts
// say why they fail on their last line) as lines.
Ran run_command(const std::string& command, bool with_errors = true) {
  FILE* p = ::popen((command + (with_errors ? " 2>&1" : " 2>/dev/null")).c_str(), "r");
  if (p == nullptr) throw RuntimeError("cannot run " + command);
  Ran r;
  std::string line;
  std::array<char, 4096> buf;
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), p) != nullptr) {
    line += buf.data();
    if (line.back() != '\n') continue;
    line.pop_back();
    r.lines.push_back(std::move(line));
    line.clear();
  }
  if (!line.empty()) r.lines.push_back(line);
  r.status = ::pclose(p);
  return r;
}

std::string script_command(const std::string& script, const std::vector<std::string>& args) {
  const fs::path path = fs::path(build::kSourceDir) / "scripts" / script;
  std::string cmd = shell_quote(path.string());
  for (const auto& a : args) cmd.append(" ").append(shell_quote(a));
  return cmd;
}

[[noreturn]] void failed(const std::string& script, const Ran& r) {
  std::string why = r.lines.empty() ? script + " failed" : r.lines.back();
  if (const size_t colon = why.find(": "); why.rfind(script, 0) == 0 && colon != std::string::npos)
    why = why.substr(colon + 2);
  if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 2) throw InputError(why);
  throw RuntimeError(why);
}
}  // namespace

std::vector<std::string> script_lines(const std::string& script,
                                      const std::vector<std::string>& args) {
  // Standard error apart: a script's progress is not its answer.
  const std::string cmd = script_command(script, args);
  Ran r = run_command(cmd, false);
  if (r.status != 0) failed(script, run_command(cmd));  // again, for its reason
  return r.lines;
}

std::string run_script(const std::string& script, const std::vector<std::string>& args) {
  const Ran r = run_command(script_command(script, args));
  if (r.status != 0) failed(script, r);
  return r.lines.empty() ? "" : r.lines.back();
}

std::vector<std::string> registry_releases() {
  // No retries: without a network the answer is one line now, not after minutes of backoff.
  const std::string view = "npm_config_fetch_retries=0 npm_config_fetch_timeout=30000 "
                           "npm view node-llama-cpp versions --json";
  Ran r = run_command(view, false);  // the JSON alone: npm warns on standard error
  nlohmann::json j;
  std::string text;
  for (const auto& l : r.lines) text += l + "\n";
  if (r.status == 0) j = nlohmann::json::parse(text, nullptr, false);
  if (r.status != 0 || !j.is_array()) {
    r = run_command(view);  // again, for npm's reason
    std::string why = r.lines.empty() ? "no answer" : r.lines.front();
    for (const auto& l : r.lines) {
      if (l.find("ERR") != std::string::npos || l.find("error") != std::string::npos) {
        why = l;
        break;
      }
    }
    throw InputError("cannot list node-llama-cpp's releases: the npm registry did not answer (" +
                     why + "); nothing was written");
  }
  std::vector<std::string> out;
  for (const auto& v : j) {
    if (v.is_string() && is_version(v.get<std::string>())) out.push_back(v.get<std::string>());
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return compare_versions(a, b) < 0; });
  return out;
}

std::vector<Candidate> release_candidates(const std::string& good, const std::string& bad,
                                          const std::vector<std::string>& listed) {
  for (const auto& v : {good, bad}) {
    if (std::find(listed.begin(), listed.end(), v) == listed.end()) {
      throw InputError("node-llama-cpp@" + v + " is not a release the npm registry lists (" +
                       (listed.empty() ? std::string("it lists none")
                                       : "the newest is " + listed.back()) + ")");
    }
  }
  const int order = compare_versions(good, bad);
  if (order == 0) throw InputError("--good and --bad are the same release (" + good + ")");
  if (order > 0) {
    throw InputError("--good " + good + " is newer than --bad " + bad +
                     ": give the older release as --good");
  }
  const bool pre = good.find('-') != std::string::npos || bad.find('-') != std::string::npos;
  std::vector<Candidate> out;
  for (const auto& v : listed) {
    if (compare_versions(v, good) < 0 || compare_versions(v, bad) > 0) continue;
    if (!pre && v.find('-') != std::string::npos) continue;
    out.push_back({v, v, "", ""});
  }
  return out;
}

std::string release_tag(const std::string& release) { return run_script("release-tag.sh", {release}); }

CommitRange commit_candidates(const std::string& llama_src, const std::string& good,
                              const std::string& bad) {
  CommitRange r;
  r.clone = run_script("bisect-git.sh", {"clone", llama_src});
  // A release is found in the checkout by the llama.cpp tag it carries.
  const auto revision = [&](const std::string& given) {
    const std::string rel = release_of(given);
    return rel.empty() ? given : release_tag(rel);
  };
  const std::string g = run_script("bisect-git.sh", {"resolve", llama_src, r.clone, revision(good)});
  const std::string b = run_script("bisect-git.sh", {"resolve", llama_src, r.clone, revision(bad)});
  if (g == b) throw InputError("--good and --bad are the same commit (" + g.substr(0, 12) + ")");
  for (const std::string& line : script_lines("bisect-git.sh", {"range", r.clone, g, b})) {
    const size_t space = line.find(' ');
    const std::string hash = line.substr(0, space);
    if (hash.size() != 40) throw RuntimeError("git gave '" + line + "' for a commit");
    r.commits.push_back({hash.substr(0, 12), "", hash,
                         space == std::string::npos ? "" : line.substr(space + 1)});
  }
  if (r.commits.size() < 2 || r.commits.front().commit != g || r.commits.back().commit != b)
    throw InputError("--bad " + bad + " is not on a first-parent line from --good " + good);
  return r;
}

std::string build_spec(const BisectConfig& c, const Candidate& k, const std::string& clone) {
  std::string spec = k.release.empty() || !clone.empty() ? clone : "npm:node-llama-cpp@" + k.release;
  if (!c.build_options.empty()) spec += "," + c.build_options;
  return spec;
}

}  // namespace hd::kinds::bisect
