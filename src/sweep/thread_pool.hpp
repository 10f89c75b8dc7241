#pragma once
// A fixed set of worker threads that runs "for i in [0, count): body(i)" batches. The sweep uses
// it for every phase (trace generation, pricing), so threads are started once per sweep rather
// than once per phase. Results are written by index into caller-owned slots, which keeps the
// output order independent of which worker finished first.
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace eaglesim {

class ThreadPool {
 public:
  // threads <= 0: std::thread::hardware_concurrency() (at least 1). A pool of 1 runs every
  // batch on the calling thread and starts no workers.
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return threads_; }

  // Runs body(i) for every i in [0, count) and returns when all have finished. The calling
  // thread works too. If bodies throw, no new indices are handed out and the exception of the
  // lowest failing index is rethrown (the same one whatever the thread count), after every
  // running body has returned.
  void run(std::size_t count, const std::function<void(std::size_t)>& body);

  static int default_threads();

 private:
  struct Batch;
  void worker_loop();
  static void work_on(Batch& batch);

  int threads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  Batch* batch_ = nullptr;      // the batch being run (null: idle)
  std::size_t generation_ = 0;  // bumped per batch so a worker joins each batch once
  int busy_workers_ = 0;
  std::condition_variable idle_;
  bool stopping_ = false;
};

}  // namespace eaglesim
