// llama-server as the server arms' peer: the pinned tree's real llama-server (scripts/
// llama-server.sh) is started and asked for the top probabilities after a prompt (n_predict 1,
// n_probs), and heterodyne's matching arm must give the same ones, bit for bit: the server
// writes each logprob as a float's exact value, and computes it by get_token_probabilities
// (tools/server/server-common.cpp), which probabilities_as_the_server() follows step for step.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/arm.h"
#include "run/text.h"
#include "test_support.h"

using namespace hd;

namespace {

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    return 0;
  }
  close(fd);
  return ntohs(a.sin_port);
}

// A llama-server for the life of the object, its log in `log`, on the CPU (-ngl 0: a GPU build
// would offload, and the arm compared runs on the CPU). A port taken between free_port() and the
// server's bind is tried again with another.
class LlamaServer {
 public:
  LlamaServer(std::vector<std::string> args, const std::string& log) {
    args.insert(args.begin(), HD_LLAMA_SERVER);
    for (const char* a : {"--host", "127.0.0.1", "--no-ui", "-ngl", "0", "-t", "1", "-tb", "1"}) {
      args.push_back(a);
    }
    for (int attempt = 0; attempt < 3 && !up_; ++attempt) start(args, log);
  }
  ~LlamaServer() { stop(); }
  bool up() const { return up_; }

  // The top `n` (id, logprob) after `prompt`, one token predicted.
  std::vector<std::pair<int32_t, float>> top(const std::vector<int32_t>& prompt, int n,
                                             bool cache_prompt) const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60);
    const nlohmann::json body = {{"prompt", prompt},       {"n_predict", 1},
                                 {"n_probs", n},           {"temperature", 0},
                                 {"cache_prompt", cache_prompt}};
    auto r = c.Post("/completion", body.dump(), "application/json");
    std::vector<std::pair<int32_t, float>> out;
    if (!r || r->status != 200) return out;
    const auto j = nlohmann::json::parse(r->body);
    for (const auto& t : j.at("completion_probabilities").at(0).at("top_logprobs")) {
      // The server's float, widened to double by its JSON: narrowing gives it back exactly.
      out.emplace_back(t.at("id").get<int32_t>(), static_cast<float>(t.at("logprob").get<double>()));
    }
    return out;
  }

 private:
  void start(std::vector<std::string> args, const std::string& log) {
    port_ = free_port();
    args.push_back("--port");
    args.push_back(std::to_string(port_));
    std::vector<char*> argv;  // made before fork: the child only opens, dups and execs
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives a test binary that crashed
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      execv(argv[0], argv.data());
      _exit(127);
    }
    httplib::Client c("127.0.0.1", port_);
    for (int i = 0; i < 300; ++i) {  // up to 30 s: loading a small model takes well under one
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {  // it exited (the port was taken, say)
        pid_ = -1;
        return;
      }
      if (auto r = c.Get("/health"); r && r->status == 200) {
        up_ = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    stop();
  }
  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 50; ++i) {  // 5 s, then SIGKILL
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  int port_ = 0;
  pid_t pid_ = -1;
  bool up_ = false;
};

// tools/server/server-common.cpp's get_token_probabilities and server-task.cpp's logarithm (0
// becomes the lowest float, which its JSON can carry), on
// one row of logits: the same partial sort, the same float sum in the same order.
std::vector<std::pair<int32_t, float>> probabilities_as_the_server(const float* logits,
                                                                   int n_vocab, int n_top) {
  struct Data {
    int32_t id;
    float logit, p;
  };
  std::vector<Data> cur(static_cast<size_t>(n_vocab));
  for (int i = 0; i < n_vocab; ++i) cur[static_cast<size_t>(i)] = {i, logits[i], 0.0f};
  std::partial_sort(cur.begin(), cur.begin() + n_top, cur.end(),
                    [](const Data& a, const Data& b) { return a.logit > b.logit; });
  const float max_l = cur[0].logit;
  float cum_sum = 0.0f;
  for (auto& t : cur) {
    t.p = expf(t.logit - max_l);
    cum_sum += t.p;
  }
  for (auto& t : cur) t.p /= cum_sum;
  std::vector<std::pair<int32_t, float>> out;
  for (int i = 0; i < n_top; ++i) {
    const float p = cur[static_cast<size_t>(i)].p;
    out.emplace_back(cur[static_cast<size_t>(i)].id,
                     p == 0.0f ? std::numeric_limits<float>::lowest() : std::log(p));
  }
  return out;
}

std::vector<std::pair<int32_t, float>> heterodyne_top(std::shared_ptr<engine::Model> m,
                                                      const engine::ArmSettings& s,
                                                      const std::vector<int32_t>& prompt, int n) {
  engine::Arm arm(m, s, static_cast<int>(prompt.size()));
  std::vector<float> logits;
  arm.run_chunk(prompt, nullptr, logits, static_cast<int>(prompt.size()) - 1);
  return probabilities_as_the_server(logits.data(), m->info().n_vocab, n);
}

}  // namespace

TEST(ServerPeer, LlamaServerGivesTheServerArmsTopProbabilitiesBitwise) {
  HD_REQUIRE_SHARED();
  ASSERT_TRUE(std::filesystem::exists(HD_LLAMA_SERVER))
      << HD_LLAMA_SERVER << " is missing: the test target builds it (scripts/llama-server.sh)";
  const std::string dir = test::temp_dir("server-peer");
  const std::string model = test::shared_path("models/stories260K.gguf");
  auto m = engine::model_load(model);
  auto prompt = m->tokenize(run::read_text_file(test::shared_path("corpora/tom-sawyer.txt")).substr(0, 2000), true);
  prompt.resize(64);
  engine::ArmSettings plain;
  plain.model = model;
  plain.n_threads = 1;
  for (const char* fa : {"off", "on"}) {
    plain.flash_attn = fa;
    SCOPED_TRACE(std::string("-fa ") + fa);
    {
      LlamaServer one({"-m", model, "-c", "256", "-np", "1", "-fa", fa}, dir + "/np1.log");
      ASSERT_TRUE(one.up()) << "llama-server did not come up: " << dir << "/np1.log";
      // A single request without the cache: the plain arm.
      const auto miss = one.top(prompt, 8, false);
      ASSERT_EQ(miss.size(), 8u);
      EXPECT_EQ(miss, heterodyne_top(m, plain, prompt, 8));
      // The same request twice with the cache: the second keeps all but the last token and
      // decodes it alone (--prompt-cache hit).
      (void)one.top(prompt, 8, true);
      const auto hit = one.top(prompt, 8, true);
      engine::ArmSettings cached = plain;
      cached.prompt_cache = "hit";
      EXPECT_EQ(hit, heterodyne_top(m, cached, prompt, 8));
      EXPECT_NE(hit, miss);  // the re-decoded token is another path: the match is not the plain arm's
    }
    for (const bool unified : {true, false}) {
      std::vector<std::string> args = {"-m", model, "-c", "1024", "-np", "4", "-fa", fa};
      args.push_back(unified ? "-kvu" : "-no-kvu");
      LlamaServer four(args, dir + "/np4.log");
      ASSERT_TRUE(four.up()) << "llama-server did not come up: " << dir << "/np4.log";
      engine::ArmSettings slots = plain;
      slots.slots = 4;
      slots.kv_unified = unified ? "on" : "off";
      EXPECT_EQ(four.top(prompt, 8, false), heterodyne_top(m, slots, prompt, 8))
          << (unified ? "-kvu" : "-no-kvu");
    }
  }
}
