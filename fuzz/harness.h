// The bodies of the fuzz targets, shared with tests/test_fuzz_regressions.cpp, which replays
// every input the fuzzers ever crashed on (fuzz/regressions/<target>/) and every seed. Each
// returns normally for a good input or one refused with InputError / RuntimeError; anything
// else (another exception, a sanitizer report, a trap) is a finding.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

// The report's embedding (report/html.h): bytes as a JSON document when they parse, else as one
// string in every place a document holds strings. The page's data must hold no '<', '>' or
// '&', read back as the same value, and leave exactly the page's two <script> elements.
void report_embed(const std::string& bytes);
// The Slurm writer (run/slurm_jobs.h): bytes as a value of an #SBATCH line. Refused with
// InputError, or read back by sbatch's rules (sbatch_words) as exactly one word, the value.
void sbatch_value(const std::string& bytes);

// sbatch 22.05's reading of an #SBATCH line (src/sbatch/opt.c, _get_argument, as Debian 12
// ships it), written again from its source: words split at isspace() outside quotes, '"' or
// '\'' group, a backslash takes the next character as it is, an unquoted '#' ends the line.
// nullopt where sbatch exits on an unmatched quote.
std::optional<std::vector<std::string>> sbatch_words(const std::string& line);

}  // namespace hd::fuzz
