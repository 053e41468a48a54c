#include "kinds/generate/generate_prompts.h"

#include <nlohmann/json.hpp>

#include "engine/generation.h"
#include "errors.h"

namespace hd::kinds {

namespace {

bool is_jsonl(const std::string& path) {
  for (const std::string ext : {".jsonl", ".ndjson"}) {
    if (path.size() >= ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0)
      return true;
  }
  return false;
}

std::string prompt_of_json_line(const std::string& line, const std::string& path, int number) {
  const auto where = "'" + path + "' line " + std::to_string(number);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception&) {
    throw InputError(where + " is not JSON (a .jsonl file holds one object a line with a "
                     "\"prompt\" string)");
  }
  if (!j.is_object() || !j.contains("prompt") || !j["prompt"].is_string())
    throw InputError(where + " has no \"prompt\" string");
  return j["prompt"].get<std::string>();
}

}  // namespace

std::vector<Prompt> read_prompts(const engine::Model& model, const std::string& path,
                                 const std::string& bytes, bool chat, int max_prompts) {
  std::vector<Prompt> out;
  const bool json = is_jsonl(path);
  size_t start = 0;
  for (int number = 1; start < bytes.size(); ++number) {
    size_t end = bytes.find('\n', start);
    if (end == std::string::npos) end = bytes.size();
    std::string line = bytes.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    std::string text = json ? prompt_of_json_line(line, path, number) : line;
    if (chat) text = engine::render_chat(model, text);
    Prompt p{text, engine::tokenize_prompt(model, text)};
    if (p.tokens.empty()) {
      throw InputError("'" + path + "' line " + std::to_string(number) +
                       ": the prompt gives no token (the model adds no BOS): give it some text");
    }
    out.push_back(std::move(p));
    if (max_prompts > 0 && static_cast<int>(out.size()) == max_prompts) break;
  }
  if (out.empty()) throw InputError("'" + path + "' holds no prompt");
  return out;
}

}  // namespace hd::kinds
