// Token ids as a run's input (--tokens): pre-tokenized data, and models without a vocabulary
// (llama.cpp's fixtures have tokenizer `no_vocab`: nothing can tokenize a text for them). Two
// forms, told apart by the first character that is not white space: decimal integers separated
// by white space, or one JSON array of integers ('['). Parsed by hand, not by nlohmann/json: a
// file of up to 1 GiB of ids would need ~16 bytes of json value per id.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hd {

// The ids, in order. InputError "<what>: ..." (what: "tokens file 'ids.txt'") naming the first
// entry that is no id, with its index among the entries (from 0, as token positions count) and
// its byte offset: not an integer (a float, a word, a JSON string, array or object), negative,
// or past 32 bits; and for a JSON array one not closed, or anything after it; no entry at all.
// Ids past the vocabulary parse: check_token_ids refuses them once its size is known.
std::vector<int32_t> parse_token_ids(std::string_view bytes, const std::string& what);

// InputError "<what>: ..." naming the first id of n_vocab or more and its index.
void check_token_ids(const std::vector<int32_t>& ids, int n_vocab, const std::string& what);

}  // namespace hd
