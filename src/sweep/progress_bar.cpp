#include "sweep/progress_bar.hpp"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

namespace eaglesim {

namespace {
constexpr long long kFirstDrawNs = 1'000'000'000;  // stay silent for the first second
constexpr long long kRedrawNs = 100'000'000;       // then at most ten draws a second
constexpr int kBarWidth = 30;
}  // namespace

ProgressBar::ProgressBar(std::string label, std::size_t total, bool enabled, std::FILE* out)
    : label_(std::move(label)),
      total_(total),
      enabled_(enabled && total > 0),
      out_(out),
      start_(std::chrono::steady_clock::now()) {
  next_draw_ns_ = kFirstDrawNs;
}

ProgressBar::~ProgressBar() { finish(); }

bool ProgressBar::is_terminal(std::FILE* stream) { return stream && ::isatty(::fileno(stream)) == 1; }

std::string ProgressBar::render(const std::string& label, std::size_t done, std::size_t total,
                                double elapsed_s, int width) {
  const double frac = total == 0 ? 1.0 : std::min(1.0, static_cast<double>(done) / total);
  const int filled = static_cast<int>(frac * width + 0.5);
  std::string bar(filled, '#');
  bar.append(width - filled, '-');
  std::string eta = "";
  if (done > 0 && done < total) {
    const double remaining = elapsed_s * (static_cast<double>(total) / done - 1.0);
    eta = fmt::format(", ~{:.0f} s left", remaining);
  }
  return fmt::format("{} [{}] {:3.0f}% {}/{}{}", label, bar, frac * 100.0, done, total, eta);
}

void ProgressBar::advance(std::size_t n) {
  const std::size_t done = done_.fetch_add(n, std::memory_order_relaxed) + n;
  if (!enabled_) return;
  const long long now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count();
  long long due = next_draw_ns_.load(std::memory_order_relaxed);
  if (now < due) return;
  // One thread wins the right to draw this tick; the others carry on working.
  if (!next_draw_ns_.compare_exchange_strong(due, now + kRedrawNs)) return;
  draw(done);
}

void ProgressBar::draw(std::size_t done) {
  std::lock_guard<std::mutex> lock(draw_mutex_);
  if (finished_) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // \r returns to column 0 and \033[K clears what a longer previous line left behind.
  std::fprintf(out_, "\r%s\033[K", render(label_, done, total_, elapsed, kBarWidth).c_str());
  std::fflush(out_);
  drew_ = true;
}

void ProgressBar::finish() {
  std::lock_guard<std::mutex> lock(draw_mutex_);
  if (finished_) return;
  finished_ = true;
  if (drew_) {
    std::fprintf(out_, "\r\033[K");
    std::fflush(out_);
  }
}

}  // namespace eaglesim
