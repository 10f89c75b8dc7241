#include "sweep/thread_pool.hpp"

#include <atomic>
#include <limits>

namespace eaglesim {

struct ThreadPool::Batch {
  std::size_t count = 0;
  const std::function<void(std::size_t)>* body = nullptr;
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::size_t error_index = std::numeric_limits<std::size_t>::max();
  std::exception_ptr error;
};

int ThreadPool::default_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int threads) : threads_(threads <= 0 ? default_threads() : threads) {
  // The caller participates in every batch, so threads_ - 1 workers give threads_ in all.
  for (int i = 1; i < threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::work_on(Batch& batch) {
  for (;;) {
    if (batch.failed.load(std::memory_order_relaxed)) return;
    const std::size_t i = batch.next.fetch_add(1, std::memory_order_relaxed);
    if (i >= batch.count) return;
    try {
      (*batch.body)(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(batch.error_mutex);
      if (i < batch.error_index) {
        batch.error_index = i;
        batch.error = std::current_exception();
      }
      batch.failed.store(true, std::memory_order_relaxed);
    }
  }
}

void ThreadPool::worker_loop() {
  std::size_t seen = 0;
  for (;;) {
    Batch* batch = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || (batch_ != nullptr && generation_ != seen); });
      if (stopping_) return;
      seen = generation_;
      batch = batch_;
      ++busy_workers_;
    }
    work_on(*batch);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --busy_workers_;
    }
    idle_.notify_all();
  }
}

void ThreadPool::run(std::size_t count, const std::function<void(std::size_t)>& body) {
  if (count == 0) return;
  Batch batch;
  batch.count = count;
  batch.body = &body;
  if (!workers_.empty() && count > 1) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      batch_ = &batch;
      ++generation_;
    }
    wake_.notify_all();
  }
  work_on(batch);
  if (!workers_.empty() && count > 1) {
    // Retire the batch first so no late worker picks it up, then wait for those inside it.
    std::unique_lock<std::mutex> lock(mutex_);
    batch_ = nullptr;
    idle_.wait(lock, [&] { return busy_workers_ == 0; });
  }
  if (batch.error) std::rethrow_exception(batch.error);
}

}  // namespace eaglesim
