// What a run reads its tokens from, one place for every command that takes --text-file or
// --tokens (diff, sweep, floor, length-curve, capture; verify and --resume reading it again):
// a text the model tokenizes (run/text.h), or a file of token ids used as they are
// (common/token_ids.h), for pre-tokenized data and for models without a vocabulary.
//
// Token ids stand where the text's tokens would: no BOS is added and nothing is tokenized, and
// they are cut exactly as a text's tokens are. So diff, sweep and floor chunks start with the
// model's BOS in place of their first id when the model adds one (llama-perplexity's
// convention, as for a text: the same ids as a text's tokens give the same run), and a model
// without a BOS (bos -1, the no_vocab fixtures) reads every id as given; capture and
// length-curve read the first ids as given, as they read a text's first tokens.
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hd::engine {
class Model;
}

namespace hd::run {

// An input as a command line or a stored configuration names it.
struct InputPath {
  std::string path;        // a file, or "-" for standard input; empty: none given
  bool token_ids = false;  // --tokens: the file holds token ids, not text
  bool empty() const { return path.empty(); }
};

// An input read: its bytes (what provenance hashes) and, for token ids, the ids they spell.
struct Input {
  InputPath source;
  std::string bytes;
  std::vector<int32_t> ids;  // token ids only
  // How messages name it: "the text", "tokens file 'ids.txt'", "standard input (--tokens -)".
  std::string name() const;
};

// The text (read_text_file) or the token ids (read_tokens_file, parsed: InputError naming the
// first entry that is no id; their range is checked once the model is known). InputError too for
// token ids with `skip_unencodable`, which drops lines of a text.
Input read_input(const InputPath& source, bool skip_unencodable);

// The input a stored run read, read again to resume or verify it: from `given` when set, else
// from `stored`, the input its configuration records. InputError when it does not hash as the
// run's `provenance` records ("text"."sha256": changed since, or another file given), when the
// run read standard input and nothing is given (the message says how to give it, `how` being the
// command: "heterodyne verify run.hdy"), or when `given` is text for a run of token ids or the
// other way round.
// `text_flag`: how `how` is given a text again (generate --resume: --prompts).
Input read_stored_input(const InputPath& stored, const nlohmann::json& provenance,
                        const InputPath& given, const std::string& how,
                        const std::string& text_flag = "-f");

// The input as chunks for `model` (run/text.h chunk_text; cut_chunks for ids, after checking
// them against its vocabulary). `skip`, `progress` and `dropped` as encodable_text's.
std::vector<std::vector<int32_t>> input_chunks(
    const engine::Model& model, const Input& input, bool skip, int chunk, int max_chunks,
    const std::function<void(const std::string&)>& progress, size_t* dropped = nullptr);

// The input's first `needed` tokens for `model` (run/text.h tokenize_text; the first ids as
// given, checked against its vocabulary).
std::vector<int32_t> input_tokens(const engine::Model& model, const Input& input, bool skip,
                                  size_t needed,
                                  const std::function<void(const std::string&)>& progress,
                                  size_t* dropped = nullptr);

}  // namespace hd::run
