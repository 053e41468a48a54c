#include "kinds/generate/generate_prompts.h"

#include <nlohmann/json.hpp>

#include "common/utf8.h"
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

// A JSON line's "prompt": a string, or token ids as llama-server's /completion takes them (a
// model without a vocabulary, llama.cpp's fixtures, reads only those).
nlohmann::json prompt_of_json_line(const std::string& line, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception&) {
    throw InputError(where + " is not JSON (a .jsonl file holds one object a line with a "
                     "\"prompt\" string)");
  }
  if (!j.is_object() || !j.contains("prompt") || !(j["prompt"].is_string() || j["prompt"].is_array()))
    throw InputError(where + " has no \"prompt\" string (or list of token ids)");
  return j["prompt"];
}

Prompt prompt_of_ids(const engine::Model& model, const nlohmann::json& ids, const std::string& where,
                     bool chat) {
  if (chat) throw InputError(where + ": --chat renders text, and this prompt is token ids");
  Prompt p;
  for (const auto& id : ids) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= model.info().n_vocab) {
      throw InputError(where + ": a token id must be a whole number from 0 to " +
                       std::to_string(model.info().n_vocab - 1) + " (the model's vocabulary)");
    }
    p.tokens.push_back(id.get<int32_t>());
  }
  // For readers only (the ids are what the arms read): half a character as \xHH.
  if (model.info().has_vocab) p.text = escape_invalid_utf8(model.detokenize(p.tokens));
  return p;
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
    const std::string where = "'" + path + "' line " + std::to_string(number);
    const nlohmann::json given = json ? prompt_of_json_line(line, where) : nlohmann::json(line);
    Prompt p;
    if (given.is_array()) {
      p = prompt_of_ids(model, given, where, chat);
    } else {
      p.text = chat ? engine::render_chat(model, given.get<std::string>()) : given.get<std::string>();
      p.tokens = engine::tokenize_prompt(model, p.text);
    }
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
