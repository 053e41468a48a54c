#include "serve/workers.h"

#include <unistd.h>

namespace hd::serve {

Workers::Workers(int n, size_t max_queued, Answer answer)
    : max_queued_(max_queued), answer_(std::move(answer)) {
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { work(); });
}

Workers::~Workers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  for (auto& job : jobs_) ::close(job.first);
}

bool Workers::offer(int fd, std::string request) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || jobs_.size() >= max_queued_) return false;
    jobs_.emplace_back(fd, std::move(request));
  }
  cv_.notify_one();
  return true;
}

void Workers::work() {
  for (;;) {
    std::pair<int, std::string> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    answer_(job.first, std::move(job.second));
  }
}

}  // namespace hd::serve
