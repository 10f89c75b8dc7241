#pragma once
// A one-line progress bar on stderr for long sweeps. It draws only when stderr is a terminal
// and the work has already taken more than a second (short runs and redirected/CI output stay
// silent), at most ten times a second, and erases itself when done so the results that follow
// on stdout are not interleaved with bar fragments.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <mutex>
#include <string>

namespace eaglesim {

class ProgressBar {
 public:
  // enabled = false: never draws (e.g. --quiet). `out` is stderr unless a test passes a file.
  ProgressBar(std::string label, std::size_t total, bool enabled, std::FILE* out = stderr);
  ~ProgressBar();  // erases the bar if it was drawn
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Thread-safe; cheap enough to call once per scenario from every worker.
  void advance(std::size_t n = 1);
  void finish();
  bool drew() const { return drew_; }

  // The text of the bar for `done` of `total` after `elapsed_s` (exposed for tests).
  static std::string render(const std::string& label, std::size_t done, std::size_t total,
                            double elapsed_s, int width);

  // True when `stream` is a terminal (isatty on its descriptor).
  static bool is_terminal(std::FILE* stream);

 private:
  void draw(std::size_t done);

  std::string label_;
  std::size_t total_;
  bool enabled_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<std::size_t> done_{0};
  std::atomic<long long> next_draw_ns_{0};  // steady-clock ns since start_ of the next allowed draw
  std::mutex draw_mutex_;
  bool drew_ = false;
  bool finished_ = false;
};

}  // namespace eaglesim
