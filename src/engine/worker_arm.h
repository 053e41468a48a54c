// An arm evaluated by a worker process (src/worker/): another llama.cpp build, or llama.cpp's
// RPC backend. Each decode sends the tokens (or rows) and the hook's captures and patches,
// and stores the logits and captured rows it gets back in the caller's hook, so transplants
// cross the process boundary unchanged.
//
// Arms with the same worker executable and RPC servers share one worker process (each its own
// context there): ggml-rpc-server serves one client at a time, and one process keeps one
// connection per server for all its contexts. Requests on a shared worker take turns.
//
// A worker that dies (an abort inside llama.cpp, a lost RPC server) or gives no answer within
// HETERODYNE_WORKER_TIMEOUT seconds (default 600) is a RuntimeError naming how it ended; its
// arms are unusable afterwards, the caller's already stored work is not touched.
#pragma once
#include <memory>

#include "engine/arm.h"

namespace hd::engine {

class WorkerConnection;

class WorkerArm : public ArmBackend {
 public:
  // `host` is this process's reading of the same file: the worker's must agree with it.
  WorkerArm(const ModelInfo& host, const ArmSettings& settings, int n_ctx);
  ~WorkerArm() override;

  void decode(const DecodeInput& in, Hook* hook, std::vector<float>& logits) override;
  int n_threads() const override { return n_threads_; }
  nlohmann::json facts() const override { return facts_; }

 private:
  std::shared_ptr<WorkerConnection> conn_;
  std::string who_;  // "the worker running '<model>' (llama.cpp build …)"
  uint32_t id_ = 0;
  int n_threads_ = 0;
  int64_t n_vocab_ = 0;
  nlohmann::json facts_;
};

}  // namespace hd::engine
