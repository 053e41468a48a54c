// The prompts of `heterodyne generate`: one a line (empty lines skipped), or, for a file named
// *.jsonl, one JSON object a line with a "prompt" string. With --chat each is rendered with the
// model's own chat template (engine/generation.h) and the rendered text is what is stored.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/model.h"

namespace hd::kinds {

struct Prompt {
  std::string text;             // as the model reads it (rendered with --chat)
  std::vector<int32_t> tokens;  // tokenized as llama-server tokenizes a prompt
};

// The prompts of `bytes` (the file's contents; `path` names it in messages and picks the form),
// at most `max_prompts` (0: all). InputError naming the line for a JSON line that is not an
// object with a "prompt" string, a prompt no token comes from, or a file without any.
std::vector<Prompt> read_prompts(const engine::Model& model, const std::string& path,
                                 const std::string& bytes, bool chat, int max_prompts);

}  // namespace hd::kinds
