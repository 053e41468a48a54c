// The fixed set of threads that answer complete requests, with a bounded queue in front.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace hd::serve {

// Complete requests waiting for one of a fixed number of threads; a full queue refuses.
class Workers {
 public:
  using Answer = std::function<void(int fd, std::string request)>;
  Workers(int n, size_t max_queued, Answer answer);
  ~Workers();  // stops the threads; closes the connections still queued
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  // Queues one request for `answer`; false (and nothing queued) when the queue is full.
  bool offer(int fd, std::string request);

 private:
  void work();

  size_t max_queued_;
  Answer answer_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<int, std::string>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace hd::serve
