#include "harness.h"

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>

#include "engine/arm.h"
#include "engine/model.h"
#include "errors.h"
#include "kinds/views.h"
#include "report/html.h"
#include "run/slurm_jobs.h"
#include "run/input.h"
#include "run/quant_risk.h"
#include "run/reference.h"
#include "run/session.h"
#include "store/safetensors.h"

namespace hd::fuzz {
namespace {

std::string scratch(const std::string& name) {
  const std::string dir = "/tmp/heterodyne-fuzz-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  return dir + "/" + name;
}

void write(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

void safetensors(const std::string& bytes) {
  try {
    const auto f = store::parse_safetensors(bytes, "fuzz input");
    // What parses must write back to bytes that parse to the same tensors.
    const auto again =
        store::parse_safetensors(store::safetensors_bytes(f.tensors, f.metadata), "round trip");
    if (again.tensors.size() != f.tensors.size()) __builtin_trap();
  } catch (const InputError&) {
  }
}

void experiment(const std::string& bytes) {
  const std::string path = scratch("input.hdy");
  write(path, bytes);
  // Every view of every kind, as show, show --json, report and serve draw it: each may refuse
  // the file, none may crash. Text from the file (token pieces) need not be UTF-8: the JSON is
  // dumped as they dump it.
  const auto each = [](auto&& view) {
    try {
      view();
    } catch (const InputError&) {
    } catch (const RuntimeError&) {
    }
  };
  kinds::ShowRequest text;
  text.worst = 3;
  kinds::ShowRequest json;
  json.json = true;
  each([&] { (void)kinds::show_experiment(path, text); });
  each([&] { (void)kinds::show_experiment(path, json); });
  each([&] {
    (void)kinds::result_document(path).dump(-1, ' ', false,
                                             nlohmann::json::error_handler_t::replace);
  });
  each([&] { (void)kinds::catalog_entry(path); });
}

void manifest(const std::string& bytes) {
  const std::string dir = scratch("ref");
  std::filesystem::create_directories(dir);
  if (!std::filesystem::exists(dir + "/activations.safetensors")) {
    store::write_safetensors(dir + "/activations.safetensors",
                             {{"inp_embd", {2, 4}, {1, -2, 3, -4, 0.5f, 0, 7, 8}}},
                             {{"format", "heterodyne-reference"}});
  }
  write(dir + "/manifest.json", bytes);
  try {
    const auto ref = run::load_reference(dir);
    (void)run::reference_arm(ref.manifest);
    (void)run::reference_quant_risk(dir, 8);
  } catch (const InputError&) {
  }
}

void text(const std::string& bytes, const engine::Model& model) {
  const std::string path = scratch("input.txt");
  write(path, bytes);
  try {
    const std::string t = run::read_text_file(path);
    for (int32_t id : model.tokenize(t, true)) {
      if (id < 0 || id >= model.info().n_vocab) __builtin_trap();  // a token outside the vocab
    }
    (void)run::chunk_text(model, t, 8, 4);
  } catch (const InputError&) {
  }
  try {  // the same bytes as token ids (--tokens): parsed, checked, cut
    const run::Input ids = run::read_input({path, true}, false);
    const auto chunks = run::input_chunks(model, ids, false, 8, 4, [](const std::string&) {});
    for (const auto& chunk : chunks) {
      for (int32_t id : chunk) {
        if (id < 0 || id >= model.info().n_vocab) __builtin_trap();  // an id past the check
      }
    }
  } catch (const InputError&) {
  }
}

void gguf(const std::string& bytes) {
  // Each input gets a name of its own: weights loaded from one name are shared while an arm
  // holds them, and a mutated file under the same name must be read afresh.
  static int serial = 0;
  const std::string path = scratch("input-" + std::to_string(serial++ % 2) + ".gguf");
  write(path, bytes);
  try {
    const auto model = engine::model_load(path);
    const auto tokens = model->tokenize("Once upon a time", true);
    for (int32_t id : tokens) {
      if (id < 0 || id >= model->info().n_vocab) __builtin_trap();  // a token outside the vocab
    }
    // Small files run one decode: the graph llama.cpp builds from the metadata is checked too.
    if (tokens.size() < 2 || tokens.size() > 64 || bytes.size() > (size_t{4} << 20)) return;
    engine::ArmSettings s;
    s.model = path;
    s.n_threads = 1;
    engine::Arm arm(model, s, static_cast<int>(tokens.size()));
    std::vector<float> logits;
    arm.run_chunk(tokens, nullptr, logits, 0);
  } catch (const InputError&) {
  } catch (const RuntimeError&) {
  }
}

void report_embed(const std::string& bytes) {
  nlohmann::json doc = nlohmann::json::parse(bytes, nullptr, false);
  if (doc.is_discarded()) {
    doc = {{"kind", "diff"}, {"path", bytes}, {"summary", {{"file", bytes}, {"text", {bytes, bytes}}}},
           {bytes, bytes}};
  }
  // What the page gets: invalid UTF-8 replaced, as report and serve dump it.
  const nlohmann::json page_value = nlohmann::json::parse(
      doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  const std::string data = report::script_data_json(doc);
  if (data.find_first_of("<>&") != std::string::npos) __builtin_trap();
  if (nlohmann::json::parse(data) != page_value) __builtin_trap();
  const std::string html = report::standalone_html(doc);
  size_t scripts = 0;
  for (size_t at = html.find("<script"); at != std::string::npos; at = html.find("<script", at + 1))
    ++scripts;
  if (scripts != 2 || html.find("<!--") != std::string::npos) __builtin_trap();
}

void sbatch_value(const std::string& bytes) {
  std::string line;
  try {
    line = "#SBATCH " + run::sbatch_word("the value", bytes);
  } catch (const InputError&) {
    return;
  }
  const auto words = sbatch_words(line);
  if (!words || words->size() != 1 || words->front() != bytes) __builtin_trap();
}

std::optional<std::vector<std::string>> sbatch_words(const std::string& line) {
  std::vector<std::string> words;
  size_t i = line.rfind("#SBATCH", 0) == 0 ? 7 : 0;
  while (true) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i >= line.size()) return words;
    std::string w;
    char quote = 0;
    bool escape = false, any = false;
    for (; i < line.size() && (quote || !std::isspace(static_cast<unsigned char>(line[i]))); ++i) {
      const char c = line[i];
      if (c == '\0' || c == '\n') break;  // sbatch's C string, and its line, end there
      if (escape) {
        escape = false;
      } else if (c == '\\') {
        escape = true;
        continue;
      } else if (quote) {
        if (c == quote) {
          quote = 0;
          continue;
        }
      } else if (c == '"' || c == '\'') {
        quote = c;
        any = true;
        continue;
      } else if (c == '#') {
        if (!w.empty() || any) words.push_back(w);
        return words;
      }
      w += c;
    }
    if (quote) return std::nullopt;
    words.push_back(w);
    if (i < line.size() && (line[i] == '\0' || line[i] == '\n')) return words;
  }
}

}  // namespace hd::fuzz
