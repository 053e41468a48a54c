#include "kinds/command_line/arm_flags.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <type_traits>

#include "engine/server_schedule.h"
#include "errors.h"

namespace hd::cli {

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  for (size_t start = 0;;) {
    const size_t comma = list.find(',', start);
    out.push_back(list.substr(start, comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

namespace {

// A field's spellings, as CLI11 names them: "-t,--threads" for the shared flags, "--a-t,--a-threads"
// for arm A's own. llama.cpp's single-dash forms (-ctk) are long options here (see
// normalize_llama_flags).
std::string flag_names(const char* spellings, const std::string& prefix) {
  std::string out;
  for (const auto& s : split_list(spellings)) {
    if (!out.empty()) out += ",";
    out += (s.size() == 1 && prefix.empty() ? "-" : "--" + prefix) + s;
  }
  return out;
}

// The long spelling, for messages: "--a-threads".
std::string long_flag(const char* spellings, const std::string& prefix) {
  return "--" + prefix + split_list(spellings).back();
}

void register_arm_flags(CLI::App& cmd, ArmFlags& f, const std::string& prefix,
                        const std::string& whose, const std::set<std::string>& skip) {
  f.prefix = prefix;
  engine::for_each_arm_field([&](const auto& field) {
    const engine::ArmFieldInfo& info = field.info;
    if (*info.flags == '\0' || skip.count(info.key)) return;
    using T = typename std::decay_t<decltype(field)>::Value;
    const std::string names = flag_names(info.flags, prefix);
    const std::string help = fmt::format(fmt::runtime(info.help), whose);
    auto given = [&f, key = std::string(info.key)] { f.given.insert(key); };
    CLI::Option* opt;
    if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      // One comma-separated list per flag: it never takes the next argument. Empty entries are
      // kept, for resolve_arm to name.
      opt = cmd.add_option_function<std::string>(
          names, [&f, member = field.member, given](const std::string& v) {
            f.values.*member = split_list(v);
            given();
          },
          help);
    } else {
      opt = cmd.add_option_function<T>(
          names, [&f, member = field.member, given](const T& v) {
            f.values.*member = v;
            given();
          },
          help);
    }
    opt->group("Arms");
  });
  cmd.add_flag("--" + prefix + "server", f.server,
               fmt::format("llama-server's defaults for {}: 4 slots sharing one KV cache, batch "
                           "2048, ubatch 512 (docs/server.md); flags given win",
                           whose))
      ->group("Arms");
}

}  // namespace

void add_arm_flags(CLI::App& cmd, ArmFlags& flags, const std::string& prefix) {
  register_arm_flags(cmd, flags, prefix,
                     prefix.empty() ? "both arms" : "arm " + prefix.substr(0, 1) + " only", {});
}

bool is_server_flag(const CLI::Option& opt) {
  bool server = opt.check_lname("server");  // --server, the preset
  engine::for_each_arm_field([&](const auto& field) {
    if (field.info.server && opt.check_lname(split_list(field.info.flags).back())) server = true;
  });
  return server;
}

void add_single_arm_flags(CLI::App& cmd, ArmFlags& flags, const std::set<std::string>& skip) {
  register_arm_flags(cmd, flags, "", "the arm", skip);
}

void add_chunk_flags(CLI::App& cmd, int& chunk, int& max_chunks, std::string& score_from) {
  cmd.add_option("--chunk,-c", chunk, "tokens per chunk, each from an empty KV cache")
      ->capture_default_str();
  cmd.add_option("--max-chunks", max_chunks, "at most this many chunks (0: all)")
      ->capture_default_str();
  cmd.add_option("--score-from", score_from,
                 "first predicted token scored: N, or 'half' (llama-perplexity's convention)")
      ->capture_default_str();
}

engine::ArmSettings resolve_arm(const std::string& model, const ArmFlags& shared,
                                const ArmFlags& own) {
  engine::ArmSettings s;
  s.model = model;
  if (shared.server || own.server) engine::apply_server_preset(s);
  engine::for_each_arm_field([&](const auto& field) {
    const engine::ArmFieldInfo& info = field.info;
    const ArmFlags* from = own.given.count(info.key)      ? &own
                           : shared.given.count(info.key) ? &shared
                                                          : nullptr;
    if (from == nullptr) return;  // llama.cpp's default, as ArmSettings spells it
    auto& v = s.*field.member;
    v = from->values.*field.member;
    const std::string flag = long_flag(info.flags, from->prefix);
    using T = typename std::decay_t<decltype(field)>::Value;
    if constexpr (std::is_same_v<T, int>) {
      if (v < info.min_flag_value) {
        throw InputError(fmt::format("{} must be at least {}, not {}", flag, info.min_flag_value, v));
      }
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (info.lower_case) {
        for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
    } else {
      // Split by split_list, not by CLI11: an empty entry ("a:1,,b:2", ",") is a slip.
      if (std::find(v.begin(), v.end(), "") != v.end()) {
        throw InputError(fmt::format("{} list '{}' has an empty entry", flag, fmt::join(v, ",")));
      }
    }
  });
  return s;
}

std::string stored_path(const std::string& path) {
  if (path.empty() || path == "-") return path;
  return std::filesystem::absolute(path).lexically_normal().string();
}

CLI::Validator finite_number(double lo, bool lo_allowed) {
  return CLI::Validator(
      [lo, lo_allowed](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        const bool number = !text.empty() && end == text.c_str() + text.size();
        if (!number || !std::isfinite(v) || v < lo || (v == lo && !lo_allowed)) {
          return "must be a finite number " + std::string(lo_allowed ? ">= " : "> ") +
                 fmt::format("{}", lo) + ", not '" + text + "'";
        }
        return "";
      },
      "", "finite number");
}

const std::set<std::string>& llama_single_dash_flags() {
  static const std::set<std::string> names = [] {
    std::set<std::string> n;
    engine::for_each_arm_field([&](const auto& field) {
      const auto spellings = split_list(field.info.flags);
      if (spellings.size() > 1 && spellings[0].size() > 1) n.insert("-" + spellings[0]);
    });
    return n;
  }();
  return names;
}

std::vector<std::string> normalize_llama_flags(int argc, char** argv) {
  const std::set<std::string>& single_dash = llama_single_dash_flags();
  std::vector<std::string> out;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    const std::string name = a.substr(0, a.find('='));
    if (single_dash.count(name)) a = "-" + a;
    out.push_back(a);
  }
  return out;
}

}  // namespace hd::cli
