#include "run/input.h"

#include <algorithm>

#include "common/sha256.h"
#include "common/token_ids.h"
#include "engine/model.h"
#include "errors.h"
#include "run/text.h"

namespace hd::run {

std::string Input::name() const {
  if (!source.token_ids) return "the text";
  return source.path == "-" ? kTokensOnStdin : "tokens file '" + source.path + "'";
}

// Read, not yet parsed: a stored run's input is checked against its hash first, so that a file
// changed since says so rather than where it stopped being ids.
static Input read_bytes(const InputPath& source) {
  Input in;
  in.source = source;
  in.bytes = source.token_ids ? read_tokens_file(source.path) : read_text_file(source.path);
  return in;
}

static Input parsed(Input in) {
  if (in.source.token_ids) in.ids = parse_token_ids(in.bytes, in.name());
  return in;
}

Input read_input(const InputPath& source, bool skip_unencodable) {
  if (source.token_ids && skip_unencodable) {
    throw InputError(
        "--skip-unencodable drops the lines of a text a vocabulary cannot encode: "
        "--tokens gives ids, with nothing to drop");
  }
  return parsed(read_bytes(source));
}

// The one-line refusals of read_stored_input, worded for a text (as they were before token ids)
// or for ids.
static void refuse_given_kind(const InputPath& stored, const InputPath& given) {
  if (given.empty() || given.token_ids == stored.token_ids) return;
  throw InputError(stored.token_ids
                       ? "this run read token ids: give them again with --tokens FILE, not -f"
                       : "this run read a text: give it again with -f FILE, not --tokens");
}

static void refuse_missing_stdin(const InputPath& stored, const std::string& how,
                                 const std::string& shown, const std::string& flag) {
  if (stored.token_ids) {
    throw InputError("this run read its token ids from standard input: give them again, " + how +
                     " --tokens FILE (or --tokens - with the ids on standard input); they must "
                     "hash to sha256 " +
                     shown);
  }
  throw InputError("this run read its text from standard input: give it again, " + how + " " + flag +
                   " FILE (or " + flag + " - with the text on standard input); it must hash to "
                   "sha256 " + shown);
}

Input read_stored_input(const InputPath& stored, const nlohmann::json& provenance,
                        const InputPath& given, const std::string& how,
                        const std::string& text_flag) {
  const std::string sha256 = provenance.at("text").at("sha256").get<std::string>();
  const std::string shown = sha256.substr(0, 16) + "…";
  refuse_given_kind(stored, given);
  if (given.empty() && stored.path == "-") refuse_missing_stdin(stored, how, shown, text_flag);
  const Input in = read_bytes(given.empty() ? stored : given);
  const std::string now = sha256_bytes(in.bytes);
  if (now == sha256) return parsed(in);
  const bool ids = stored.token_ids;
  if (given.empty()) {
    throw InputError("the " + std::string(ids ? "tokens" : "text") + " file '" + stored.path +
                     "' has changed since this run started (give the " + (ids ? "ids" : "text") +
                     " it read with " + how + (ids ? " --tokens FILE)" : " " + text_flag + " FILE)"));
  }
  throw InputError((ids ? std::string("the token ids given with --tokens ")
                       : "the text given with " + text_flag + " ") +
                   given.path + (ids ? " are not the ones" : " is not the one") +
                   " this run read (sha256 " + now.substr(0, 16) + "…, the run's " + shown + ")");
}

std::vector<std::vector<int32_t>> input_chunks(
    const engine::Model& model, const Input& input, bool skip, int chunk, int max_chunks,
    const std::function<void(const std::string&)>& progress, size_t* dropped) {
  if (!input.source.token_ids) {
    return chunk_text(model, encodable_text(model, input.bytes, skip, progress, dropped), chunk,
                      max_chunks);
  }
  if (dropped != nullptr) *dropped = 0;
  check_token_ids(input.ids, model.info().n_vocab, input.name());
  return cut_chunks(model, input.ids, chunk, max_chunks, input.name());
}

std::vector<int32_t> input_tokens(const engine::Model& model, const Input& input, bool skip,
                                  size_t needed,
                                  const std::function<void(const std::string&)>& progress,
                                  size_t* dropped) {
  if (!input.source.token_ids) {
    return tokenize_text(model, encodable_text(model, input.bytes, skip, progress, dropped),
                         needed);
  }
  if (dropped != nullptr) *dropped = 0;
  check_token_ids(input.ids, model.info().n_vocab, input.name());
  const size_t n = needed == 0 ? input.ids.size() : std::min(needed, input.ids.size());
  return {input.ids.begin(), input.ids.begin() + static_cast<long>(n)};
}

}  // namespace hd::run
