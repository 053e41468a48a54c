// libFuzzer target: see harness.h (text). The model comes from HD_FUZZ_MODEL (default
// ../shared/models/stories260K.gguf).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/model.h"
#include "harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto model = [] {
    const char* p = std::getenv("HD_FUZZ_MODEL");
    return hd::engine::model_load(p ? p : "../shared/models/stories260K.gguf");
  }();
  hd::fuzz::text(std::string(reinterpret_cast<const char*>(data), size), *model);
  return 0;
}
