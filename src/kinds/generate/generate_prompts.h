// The prompts of `heterodyne generate`: one a line (empty lines skipped), or, for a file named
// *.jsonl, one JSON object a line with a "prompt": a string, or a list of token ids as
// llama-server's /completion takes them (read as they are: no BOS added; the only prompts a
// model without a vocabulary can read). With --chat each text is rendered with the model's own
// chat template (engine/generation.h) and the rendered text is what is stored.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/model.h"

namespace hd::kinds {

struct Prompt {
  std::string text;             // as the model reads it (rendered with --chat); ids: their text
                                // where the model has a vocabulary, "" where it has none
  std::vector<int32_t> tokens;  // tokenized as llama-server tokenizes a prompt
};

// The prompts of `bytes` (the file's contents; `path` names it in messages and picks the form),
// at most `max_prompts` (0: all). InputError naming the line for a JSON line that is not an
// object with a "prompt" string or list of ids, an id outside the vocabulary, a prompt no token
// comes from, or a file without any.
std::vector<Prompt> read_prompts(const engine::Model& model, const std::string& path,
                                 const std::string& bytes, bool chat, int max_prompts);

}  // namespace hd::kinds
