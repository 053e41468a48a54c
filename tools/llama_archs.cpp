// heterodyne-llama-archs: llama.cpp's own tests/test-llama-archs.cpp, compiled unchanged from
// the llama.cpp tree heterodyne builds against, plus a listing mode. `heterodyne make-model
// --arch` runs it to write the random-weight fixture of an architecture (docs/architectures.md).
//
//   heterodyne-llama-archs -a ARCH -s SEED -o DIR   the test's own mode: DIR/ARCH-{dense,moe}.gguf
//   heterodyne-llama-archs --list                    "known NAME" for every architecture llama.cpp
//                                                    names, "fixture NAME-dense.gguf" (or -moe) for
//                                                    every file the line above would write
//
// The listing runs the test's own save loop with the final write replaced by a print, so it
// cannot drift from what the generator really writes (its skips, its dense/MoE rules). It
// builds each model in memory, without drawing its weights, to get there (about a second).
//
// The test's headers come first, so the two renames below touch only the test's own code.
#include "common.h"
#include "ggml-backend.h"
#include "ggml-cpp.h"
#include "ggml.h"
#include "gguf.h"
#include "llama-cpp.h"
#include "llama.h"
#include "log.h"
// test-llama-archs.cpp includes these two relative to itself ("../src/..."); the include path
// has the llama.cpp tree's src/ for them.
#include <cstdio>
#include <cstring>
#include <string>

#include "llama-arch.h"
#include "llama-model-saver.h"

static bool g_list_only = false;

// Where the test calls llama_model_save_to_file: list the file instead of writing it.
static void save_or_list(const llama_model* model, const char* path) {
  if (!g_list_only) {
    llama_model_save_to_file(model, path);
    return;
  }
  const char* slash = std::strrchr(path, '/');
  std::printf("fixture %s\n", slash ? slash + 1 : path);
}

// And where it fills a new model's tensors with random values: a listing needs none of them,
// and drawing them is nearly all the time the test's loop takes.
static void leave_tensor_data(ggml_tensor* /*tensor*/, void* /*userdata*/) {}
static llama_model* init_or_skip_data(gguf_context* metadata, llama_model_set_tensor_data_t set,
                                      void* userdata, llama_model_params params) {
  return llama_model_init_from_user(metadata, g_list_only ? leave_tensor_data : set, userdata,
                                    params);
}

#define llama_model_save_to_file save_or_list
#define llama_model_init_from_user init_or_skip_data
#define main llama_archs_test_main
#include "test-llama-archs.cpp"
#undef main
#undef llama_model_save_to_file
#undef llama_model_init_from_user

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--list") == 0) {
    common_init();
    for (const llm_arch arch : llm_arch_all()) {
      if (arch != LLM_ARCH_UNKNOWN) std::printf("known %s\n", llm_arch_name(arch));
    }
    g_list_only = true;
    try {
      return save_models(LLM_ARCH_UNKNOWN, 1, LOG_LEVEL_ERROR, "");
    } catch (const std::exception& err) {
      std::fprintf(stderr, "listing failed: %s\n", err.what());
      return 1;
    }
  }
  return llama_archs_test_main(argc, argv);
}
