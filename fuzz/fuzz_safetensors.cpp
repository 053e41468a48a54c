// libFuzzer target: the safetensors parser (references' activations). Any input must give a
// parsed file or an InputError; anything else (a crash, another exception, a sanitizer report)
// is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "errors.h"
#include "store/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    const auto f = hd::store::parse_safetensors(bytes, "fuzz input");
    // What parses must write back to bytes that parse to the same tensors.
    const auto again = hd::store::parse_safetensors(
        hd::store::safetensors_bytes(f.tensors, f.metadata), "round trip");
    if (again.tensors.size() != f.tensors.size()) __builtin_trap();
  } catch (const hd::InputError&) {
  }
  return 0;
}
