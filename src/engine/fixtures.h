// llama.cpp's own random-weight fixtures: one small GGUF per architecture its model saver
// supports, dense and MoE, written by the tool its test suite uses (tests/test-llama-archs.cpp,
// built by `make fixtures` as heterodyne-llama-archs from the llama.cpp tree heterodyne links).
// Vocabulary of 128 ids without a tokenizer ("no_vocab"), 2 layers for most architectures.
//
// Both the listing and the files are cached under
// $HETERODYNE_CACHE/fixtures/<llama.cpp build>/ (docs/architectures.md): the listing costs the
// generator a few seconds once, each file a fraction of a second once.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/output_file.h"

namespace hd::engine {

struct FixtureArch {
  std::string name;  // llama.cpp's architecture name, e.g. "qwen3", "gpt-oss"
  bool dense = false;
  bool moe = false;
};

// Every architecture the generator makes a fixture of, by name. RuntimeError when the
// generator was not built ("make fixtures") or fails.
std::vector<FixtureArch> fixture_archs();

// The cached fixture of `arch` (its MoE variant with `moe`) for `seed`, made when absent.
// InputError: an architecture llama.cpp does not name, one it makes no fixture of, or a
// variant it lacks (each naming what to do instead).
std::string ensure_fixture(const std::string& arch, bool moe, uint64_t seed);

// That fixture copied to `out_path` under `policy` (checked before anything is generated).
void make_fixture(const std::string& arch, bool moe, uint64_t seed, const std::string& out_path,
                  const OutputPolicy& policy);

}  // namespace hd::engine
