#include "llama_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
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
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>

namespace hd::test {

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

TopLogprobs top_of(const nlohmann::json& entries) {
  TopLogprobs out;
  for (const auto& t : entries) {
    // The server's float, widened to double by its JSON: narrowing gives it back exactly.
    out.emplace_back(t.at("id").get<int32_t>(), static_cast<float>(t.at("logprob").get<double>()));
  }
  return out;
}

}  // namespace

LlamaServer::LlamaServer(std::vector<std::string> args, const std::string& log) {
  args.insert(args.begin(), HD_LLAMA_SERVER);
  for (const char* a : {"--host", "127.0.0.1", "--no-ui", "-ngl", "0", "-t", "1", "-tb", "1"}) {
    args.push_back(a);
  }
  for (int attempt = 0; attempt < 3 && !up_; ++attempt) start(args, log);
}

LlamaServer::~LlamaServer() { stop(); }

TopLogprobs LlamaServer::top(const std::vector<int32_t>& prompt, int n, bool cache_prompt) const {
  const auto done = complete(prompt, 1, n, cache_prompt);
  return done.empty() ? TopLogprobs{} : done[0].top;
}

std::vector<LlamaServer::Generated> LlamaServer::complete(const std::vector<int32_t>& prompt,
                                                          int n_predict, int n_probs,
                                                          bool cache_prompt) const {
  httplib::Client c("127.0.0.1", port_);
  c.set_read_timeout(120);
  const nlohmann::json body = {{"prompt", prompt},   {"n_predict", n_predict},
                               {"n_probs", n_probs}, {"temperature", 0},
                               {"cache_prompt", cache_prompt}};
  auto r = c.Post("/completion", body.dump(), "application/json");
  std::vector<Generated> out;
  if (!r || r->status != 200) return out;
  const auto j = nlohmann::json::parse(r->body);
  for (const auto& t : j.at("completion_probabilities")) {
    out.push_back({t.at("id").get<int32_t>(), static_cast<float>(t.at("logprob").get<double>()),
                   top_of(t.at("top_logprobs"))});
  }
  return out;
}

void LlamaServer::start(std::vector<std::string> args, const std::string& log) {
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

void LlamaServer::stop() {
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

TopLogprobs probabilities_as_the_server(const float* logits, int n_vocab, int n_top) {
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
  TopLogprobs out;
  for (int i = 0; i < n_top; ++i) {
    const float p = cur[static_cast<size_t>(i)].p;
    out.emplace_back(cur[static_cast<size_t>(i)].id,
                     p == 0.0f ? std::numeric_limits<float>::lowest() : std::log(p));
  }
  return out;
}

}  // namespace hd::test
