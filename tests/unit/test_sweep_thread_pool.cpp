#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "sweep/progress_bar.hpp"
#include "sweep/thread_pool.hpp"

using namespace eaglesim;

TEST(SweepThreadPool, RunsEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    std::vector<std::atomic<int>> hits(1000);
    pool.run(hits.size(), [&](std::size_t i) { hits[i].fetch_add(1); });
    for (std::size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << "index " << i << " threads " << threads;
  }
}

TEST(SweepThreadPool, IsReusableAcrossBatchesAndHandlesEmptyOnes) {
  ThreadPool pool(3);
  std::atomic<long> sum{0};
  for (int batch = 0; batch < 50; ++batch) pool.run(batch, [&](std::size_t i) { sum += static_cast<long>(i); });
  long expected = 0;
  for (int batch = 0; batch < 50; ++batch) expected += static_cast<long>(batch) * (batch - 1) / 2;
  EXPECT_EQ(sum.load(), expected);
}

TEST(SweepThreadPool, RethrowsTheLowestFailingIndexWhateverTheThreadCount) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    try {
      pool.run(200, [](std::size_t i) {
        if (i == 17 || i == 150) throw std::runtime_error("failed at " + std::to_string(i));
      });
      FAIL() << "expected an exception";
    } catch (const std::runtime_error& e) {
      // 150 may or may not run (work stops once something failed), 17 always runs before it
      // is handed out to the same or a later claim; the lowest index wins.
      EXPECT_STREQ(e.what(), "failed at 17") << threads << " threads";
    }
    // Still usable after a failure.
    std::atomic<int> n{0};
    pool.run(10, [&](std::size_t) { ++n; });
    EXPECT_EQ(n.load(), 10);
  }
}

TEST(SweepThreadPool, DefaultUsesHardwareConcurrency) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.size(), ThreadPool::default_threads());
  EXPECT_GE(pool.size(), 1);
}

TEST(SweepProgressBar, RendersFractionCountAndEstimate) {
  EXPECT_EQ(ProgressBar::render("sweep", 0, 10, 0.0, 10), "sweep [----------]   0% 0/10");
  EXPECT_EQ(ProgressBar::render("sweep", 5, 10, 2.0, 10), "sweep [#####-----]  50% 5/10, ~2 s left");
  EXPECT_EQ(ProgressBar::render("sweep", 10, 10, 4.0, 10), "sweep [##########] 100% 10/10");
}

TEST(SweepProgressBar, SilentForShortRunsAndWhenDisabled) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressBar quick("sweep", 100, true, f);
    for (int i = 0; i < 100; ++i) quick.advance();
    EXPECT_FALSE(quick.drew());  // under a second: nothing drawn
  }
  EXPECT_EQ(std::ftell(f), 0L);
  std::fclose(f);
  // A file is not a terminal, so the CLI never enables the bar when stderr is redirected.
  std::FILE* g = std::tmpfile();
  EXPECT_FALSE(ProgressBar::is_terminal(g));
  std::fclose(g);
}

TEST(SweepProgressBar, DrawsAfterASecondAndErasesItself) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressBar slow("sweep", 4, true, f);
    slow.advance();
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    slow.advance();
    EXPECT_TRUE(slow.drew());
  }
  std::rewind(f);
  char buf[512] = {0};
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  const std::string text(buf, n);
  EXPECT_NE(text.find("2/4"), std::string::npos) << text;
  EXPECT_EQ(text.substr(text.size() - 4), "\r\033[K");  // erased at the end
  std::fclose(f);

  std::FILE* g = std::tmpfile();
  {
    ProgressBar off("sweep", 4, false, g);
    std::this_thread::sleep_for(std::chrono::milliseconds(1050));
    off.advance();
    EXPECT_FALSE(off.drew());
  }
  EXPECT_EQ(std::ftell(g), 0L);
  std::fclose(g);
}
