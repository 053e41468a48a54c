#include "engine/spawn.h"

extern char** environ;

namespace hd::engine {

int spawn_llama_process(pid_t& pid, const std::string& exe, const std::vector<std::string>& args,
                        const posix_spawn_file_actions_t* actions) {
  std::vector<char*> argv{const_cast<char*>(exe.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_store;
  for (char** e = environ; *e != nullptr; ++e) env_store.emplace_back(*e);
  env_store.emplace_back("GGML_NO_BACKTRACE=1");
  std::vector<char*> envp;
  for (auto& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);
  return ::posix_spawn(&pid, exe.c_str(), actions, nullptr, argv.data(), envp.data());
}

}  // namespace hd::engine
