#include "serve/run_form.h"

#include <algorithm>

#include "common/utf8.h"
#include "engine/arm.h"
#include "engine/gguf_file.h"
#include "errors.h"
#include "kinds/registry.h"
#include "serve/catalog.h"
#include "serve/limits.h"

namespace hd::serve {
namespace {

// A string from the request as a message quotes it: a NUL or a line break in it is shown, and
// nothing after it is lost.
std::string quoted(const std::string& s) { return "'" + printable(s) + "'"; }

// Fields the page sends; anything else is a mistake (a misspelt field would be ignored).
void require_known_fields(const nlohmann::json& j, const std::string& where,
                          std::initializer_list<const char*> known) {
  for (const auto& item : j.items()) {
    const std::string& key = item.key();
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; })) {
      throw InputError(where + "unknown field " + quoted(key));
    }
  }
}

// A file the run will read, as diff would take it: a regular file (not a FIFO, a device or a
// folder such as "." itself) with something in it.
std::filesystem::path regular_file(const std::optional<std::filesystem::path>& real,
                                   const std::string& field, const std::string& rel,
                                   const std::string& what) {
  std::error_code ec;
  if (!real || !std::filesystem::is_regular_file(*real, ec)) {
    throw InputError(field + ": " + quoted(rel) + " is not " + what + " in the models folder");
  }
  if (std::filesystem::file_size(*real, ec) == 0 || ec) {
    throw InputError(field + ": " + quoted(rel) + " is empty");
  }
  return *real;
}

std::string str(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return "";
  if (!j[key].is_string()) throw InputError(std::string(key) + " must be a string");
  return j[key].get<std::string>();
}

long integer(const nlohmann::json& j, const char* key, long fallback, long lo, long hi) {
  if (!j.contains(key) || j[key].is_null() ||
      (j[key].is_string() && j[key].get<std::string>().empty()))
    return fallback;
  long v = 0;
  if (j[key].is_number_integer()) {
    v = j[key].get<long>();
  } else if (j[key].is_string()) {
    try {
      size_t used = 0;
      v = std::stol(j[key].get<std::string>(), &used);
      if (used != j[key].get<std::string>().size()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      throw InputError(std::string(key) + " must be a whole number");
    }
  } else {
    throw InputError(std::string(key) + " must be a whole number");
  }
  if (v < lo || v > hi) {
    throw InputError(std::string(key) + " must be between " + std::to_string(lo) + " and " +
                     std::to_string(hi) + ", not " + std::to_string(v));
  }
  return v;
}

bool flag(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return false;
  if (!j[key].is_boolean()) throw InputError(std::string(key) + " must be true or false");
  return j[key].get<bool>();
}

std::string model(const nlohmann::json& form, const char* key, const Sandbox& models) {
  const std::string rel = str(form, key);
  const auto real = models.resolve(rel);
  if (!real || real->extension() != ".gguf") {
    throw InputError(std::string(key) + ": " + quoted(rel) +
                     " is not a GGUF file in the models folder");
  }
  const std::string path = regular_file(real, key, rel, "a GGUF file").string();
  try {
    (void)engine::gguf_check(path);  // what the run's first step would refuse, refused now
  } catch (const InputError& e) {
    throw InputError(std::string(key) + ": " + models.relative(path) + ": " + printable(e.what()));
  }
  return path;
}

void arm_settings(const nlohmann::json& form, const char* key, const std::string& prefix,
                  std::vector<std::string>& args) {
  if (!form.contains(key) || form[key].is_null()) return;
  const nlohmann::json& s = form[key];
  if (!s.is_object()) throw InputError(std::string(key) + " must be an object");
  require_known_fields(s, std::string(key) + ": ", {"ctk", "ctv", "fa", "ub", "t"});
  const auto& types = engine::cache_types();
  for (const char* ct : {"ctk", "ctv"}) {
    const std::string v = str(s, ct);
    if (v.empty()) continue;
    if (std::find(types.begin(), types.end(), v) == types.end()) {
      throw InputError(std::string(key) + "." + ct + ": unknown cache type " + quoted(v));
    }
    args.insert(args.end(), {"--" + prefix + ct, v});
  }
  const std::string fa = str(s, "fa");
  if (!fa.empty()) {
    if (fa != "on" && fa != "off" && fa != "auto") {
      throw InputError(std::string(key) + ".fa must be on, off or auto");
    }
    args.insert(args.end(), {"--" + prefix + "fa", fa});
  }
  const long ub = integer(s, "ub", 0, 0, 1 << 16);
  if (ub > 0) args.insert(args.end(), {"--" + prefix + "ub", std::to_string(ub)});
  const long t = integer(s, "t", 0, 0, 1024);
  if (t > 0) args.insert(args.end(), {"--" + prefix + "t", std::to_string(t)});
}

}  // namespace

RunPlan plan_run(const nlohmann::json& form, const Sandbox& models) {
  if (!form.is_object()) throw InputError("the request body must be a JSON object");
  require_known_fields(form, "",
                       {"a", "b", "b_quant", "a_settings", "b_settings", "text", "text_file",
                        "chunk", "max_chunks", "transplants", "components"});
  RunPlan plan;
  plan.args = {std::string(kinds::form_kind().name()), "--a", model(form, "a", models)};
  const std::string b = str(form, "b"), quant = str(form, "b_quant");
  if (b.empty() == quant.empty())
    throw InputError("give either arm B's model or a quant type for B");
  std::string b_label;
  if (!b.empty()) {
    plan.args.insert(plan.args.end(), {"--b", model(form, "b", models)});
    b_label = std::filesystem::path(b).stem().string();
  } else {
    const auto& ok = form_quant_types();
    if (std::find(ok.begin(), ok.end(), quant) == ok.end()) {
      throw InputError("b_quant: unknown quant type " + quoted(quant));
    }
    plan.args.insert(plan.args.end(), {"--b-quant", quant});
    b_label = quant;
  }
  arm_settings(form, "a_settings", "a-", plan.args);
  arm_settings(form, "b_settings", "b-", plan.args);

  plan.stem = std::filesystem::path(str(form, "a")).stem().string() + "-vs-" + b_label;
  for (char& c : plan.stem) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }

  const std::string text = str(form, "text"), text_file = str(form, "text_file");
  if (text.empty() == text_file.empty()) throw InputError("give either a text or a text file");
  if (!text_file.empty()) {
    plan.text_file =
        regular_file(models.resolve(text_file), "text_file", text_file, "a file").string();
  } else {
    plan.pasted_text = text;
  }
  const long chunk = integer(form, "chunk", 128, 2, 32768);
  const long chunks = integer(form, "max_chunks", 4, 1, limits::kMaxChunksPerRun);
  if (chunk * chunks > limits::kMaxTokensPerRun) {
    throw InputError("chunk x max_chunks is " + std::to_string(chunk * chunks) +
                     " tokens; a run from the page scores at most " +
                     std::to_string(limits::kMaxTokensPerRun) +
                     " (heterodyne diff in a terminal has no such limit)");
  }
  plan.args.insert(plan.args.end(),
                   {"--chunk", std::to_string(chunk), "--max-chunks", std::to_string(chunks)});
  if (flag(form, "transplants")) plan.args.push_back("--transplants");
  if (flag(form, "components")) plan.args.push_back("--components");
  return plan;
}

std::vector<std::string> run_args(const RunPlan& plan, const std::string& text_path,
                                  const std::string& output) {
  std::vector<std::string> args = plan.args;
  args.insert(args.end(), {"--text-file", text_path, "-o", output});
  return args;
}

}  // namespace hd::serve
