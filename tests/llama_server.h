// The pinned tree's real llama-server (scripts/llama-server.sh), started by a test on the CPU,
// and the numbers it sends: the top probabilities after a prompt, or a whole greedy completion
// with each token's top probabilities. The peer of the server arms (test_server_peer.cpp) and
// of generate (test_generate_peer.cpp).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hd::test {

using TopLogprobs = std::vector<std::pair<int32_t, float>>;

// A llama-server for the life of the object, its log in `log`, on the CPU (-ngl 0: a GPU build
// would offload, and the arm compared runs on the CPU), one thread. A port taken between
// choosing it and the server's bind is tried again with another.
class LlamaServer {
 public:
  LlamaServer(std::vector<std::string> args, const std::string& log);
  ~LlamaServer();
  LlamaServer(const LlamaServer&) = delete;
  LlamaServer& operator=(const LlamaServer&) = delete;
  bool up() const { return up_; }

  // The top `n` (id, logprob) after `prompt`, one token predicted.
  TopLogprobs top(const std::vector<int32_t>& prompt, int n, bool cache_prompt) const;

  // A greedy completion of `prompt` (temperature 0, up to n_predict tokens): each generated
  // token with its top `n_probs`. Empty when the request failed.
  struct Generated {
    int32_t id;
    float logprob;  // the chosen token's
    TopLogprobs top;
    bool operator==(const Generated&) const = default;
  };
  std::vector<Generated> complete(const std::vector<int32_t>& prompt, int n_predict, int n_probs,
                                  bool cache_prompt) const;

 private:
  void start(std::vector<std::string> args, const std::string& log);
  void stop();

  int port_ = 0;
  pid_t pid_ = -1;
  bool up_ = false;
};

// tools/server/server-common.cpp's get_token_probabilities and server-task.cpp's logarithm (0
// becomes the lowest float, which its JSON can carry), on one row of logits: the same partial
// sort, the same float sum in the same order.
TopLogprobs probabilities_as_the_server(const float* logits, int n_vocab, int n_top);

}  // namespace hd::test
