// libFuzzer target: the text entry — reading a text file as diff does (UTF-8 checked) and
// tokenizing it with a real vocabulary, then cutting it into chunks. The model comes from
// HD_FUZZ_MODEL (default ../shared/models/stories260K.gguf). Expected: tokens or InputError.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "engine/model.h"
#include "errors.h"
#include "run/session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::shared_ptr<hd::engine::Model> model = [] {
    const char* p = std::getenv("HD_FUZZ_MODEL");
    return hd::engine::model_load(p ? p : "../shared/models/stories260K.gguf");
  }();
  static const std::string path = "/tmp/heterodyne-fuzz-" + std::to_string(getpid()) + ".txt";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    const std::string text = hd::run::read_text_file(path);
    const auto tokens = model->tokenize(text, true);
    for (int32_t t : tokens) {
      if (t < 0 || t >= model->info().n_vocab) __builtin_trap();  // a token outside the vocab
    }
    (void)hd::run::chunk_text(*model, text, 8, 4);
  } catch (const hd::InputError&) {
  }
  return 0;
}
