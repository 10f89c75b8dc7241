// The Chrome-trace printer: parse the output back and check what Perfetto needs.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "report/chrome_trace.hpp"

namespace eaglesim {
namespace {

Timeline two_rank_timeline() {
  Timeline tl;
  tl.step = "verify";
  tl.ranks = 2;
  for (int r = 0; r < 2; ++r) {
    Span g;
    g.rank = r;
    g.op_index = 0;
    g.kind = OpKind::gemm;
    g.name = "o_proj";
    g.layer = 0;
    g.start_us = r * 3.0;
    g.end_us = g.start_us + 5.0;
    g.shape = "m=4 n=4096 k=4096 bf16";
    g.detail = "model";
    Span ar;
    ar.rank = r;
    ar.op_index = 1;
    ar.kind = OpKind::allreduce;
    ar.name = "attn \"allreduce\"";  // quotes must be escaped
    ar.layer = 1;
    ar.start_us = g.end_us;
    ar.end_us = 18.0;
    ar.wait_us = r == 0 ? 3.0 : 0.0;
    ar.bytes = 32768;
    ar.shape = "32768 B bf16";
    ar.detail = "ring/LL";
    tl.spans.push_back(g);
    tl.spans.push_back(ar);
  }
  return tl;
}

TEST(Timeline, ChromeJsonParsesAndHasPerfettoMetadata) {
  std::string text = timelines_to_chrome_json({two_rank_timeline(), two_rank_timeline()}, {"nccl", "fused"});
  nlohmann::json doc = nlohmann::json::parse(text);  // throws if malformed
  ASSERT_TRUE(doc.contains("traceEvents"));
  const auto& ev = doc["traceEvents"];
  ASSERT_TRUE(ev.is_array());

  std::map<int, std::string> process_names;
  std::set<std::pair<int, int>> named_threads;
  int x_events = 0, instants = 0;
  for (const auto& e : ev) {
    ASSERT_TRUE(e.contains("ph"));
    ASSERT_TRUE(e.contains("pid"));
    ASSERT_TRUE(e.contains("name"));
    const std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "process_name") process_names[e["pid"].get<int>()] = e["args"]["name"].get<std::string>();
    if (ph == "M" && e["name"] == "thread_name") named_threads.insert({e["pid"].get<int>(), e["tid"].get<int>()});
    if (ph == "X") {
      ++x_events;
      for (const char* key : {"ts", "dur", "tid", "cat", "args"}) ASSERT_TRUE(e.contains(key)) << key;
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      EXPECT_TRUE(e["args"].contains("shape"));
      const int pid = e["pid"].get<int>(), tid = e["tid"].get<int>();
      EXPECT_TRUE(process_names.count(pid)) << "metadata precedes events of a process";
      EXPECT_TRUE(named_threads.count({pid, tid}));
      if (e["cat"] == "allreduce") {
        EXPECT_EQ(e["args"]["bytes"], 32768);
        EXPECT_EQ(e["args"]["detail"], "ring/LL");
        EXPECT_TRUE(e["args"].contains("wait_us"));
      }
    }
    if (ph == "i") {
      ++instants;
      EXPECT_EQ(e["s"], "p");
      EXPECT_TRUE(e.contains("ts"));
    }
  }
  EXPECT_EQ(x_events, 8);
  EXPECT_EQ(instants, 8) << "layer 0 and layer 1 start markers, per rank, per group";
  ASSERT_EQ(process_names.size(), 4u) << "a process per rank per strategy";
  EXPECT_EQ(process_names[1], "nccl | verify rank 0");
  EXPECT_EQ(process_names[4], "fused | verify rank 1");
  EXPECT_EQ(named_threads.size(), 4u);

  // Times come out in µs as given.
  for (const auto& e : ev)
    if (e["ph"] == "X" && e["pid"] == 2 && e["cat"] == "allreduce") {
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 8.0);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 10.0);
      EXPECT_EQ(e["name"], "attn \"allreduce\"");
    }
}

TEST(Timeline, EmptyIsStillValid) {
  nlohmann::json doc = nlohmann::json::parse(timelines_to_chrome_json({}, {}));
  EXPECT_TRUE(doc["traceEvents"].empty());
}

TEST(Timeline, LabelsMustMatch) {
  EXPECT_THROW(timelines_to_chrome_json({two_rank_timeline()}, {"a", "b"}), std::logic_error);
}

}  // namespace
}  // namespace eaglesim
