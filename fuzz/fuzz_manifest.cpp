// libFuzzer target: a gate reference's manifest.json (and tolerances.json) as check, calibrate
// and quant-risk read them. The input is the manifest; the activations file is a fixed valid
// one. Expected: InputError for anything malformed; never another exception or a crash.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "errors.h"
#include "run/quant_risk.h"
#include "run/reference.h"
#include "store/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = [] {
    const std::string d = "/tmp/heterodyne-fuzz-ref-" + std::to_string(getpid());
    std::filesystem::create_directories(d);
    hd::store::write_safetensors(d + "/activations.safetensors",
                                 {{"inp_embd", {2, 4}, {1, -2, 3, -4, 0.5f, 0, 7, 8}}},
                                 {{"format", "heterodyne-reference"}});
    return d;
  }();
  {
    std::ofstream out(dir + "/manifest.json", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    const auto ref = hd::run::load_reference(dir);
    (void)hd::run::reference_arm(ref.manifest);
    (void)hd::run::reference_quant_risk(dir, 8);
  } catch (const hd::InputError&) {
  }
  return 0;
}
