// The bodies of the fuzz targets, shared with tests/test_fuzz_regressions.cpp, which replays
// every input the fuzzers ever crashed on (fuzz/regressions/<target>/) and every seed. Each
// returns normally for a good input or one refused with InputError / RuntimeError; anything
// else (another exception, a sanitizer report, a trap) is a finding.
#pragma once
#include <memory>
#include <string>

namespace hd::engine {
class Model;
}

namespace hd::fuzz {

void safetensors(const std::string& bytes);
void experiment(const std::string& bytes);  // written to a temporary file and read as show does
void manifest(const std::string& bytes);    // a reference's manifest.json beside valid activations
void text(const std::string& bytes, const engine::Model& model);  // read, tokenize, chunk; as ids
// A GGUF model: checked, its vocabulary loaded, a text tokenized, and (small files) one
// decode. A failed GGML_ASSERT inside llama.cpp aborts: a finding, to be refused before it.
void gguf(const std::string& bytes);

}  // namespace hd::fuzz
