// Which version the writer writes (the lowest that holds the trace), that a version-2 file reads
// back into the same trace and bytes, and what decides the draft forwards per cycle.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "io/json_cursor.hpp"
#include "trace/trace_json.hpp"

using namespace eaglesim;

namespace {

const std::string kData = EAGLESIM_TEST_DATA;

std::string rewritten(const Trace& t) {
  return trace_to_string(parse_trace(JsonCursor::parse_text(trace_to_string(t), "t.json"), "t.json"));
}

}  // namespace

TEST(TraceVersion, VersionOneTraceStaysVersionOne) {
  const Trace t = read_trace(kData + "/tiny_trace.json");
  EXPECT_EQ(required_version(t), 1);
  EXPECT_EQ(first_version2_content(t), "");
  EXPECT_NE(trace_to_string(t).find("\"version\": 1,"), std::string::npos);
  EXPECT_EQ(draft_forwards_per_cycle(t), 3);  // meta.draft_tokens
}

TEST(TraceVersion, EachVersionTwoItemRaisesTheVersion) {
  const Trace base = read_trace(kData + "/tiny_trace.json");
  Trace t = base;
  t.meta.batch = 1;  // present, even at 1: the file says it
  EXPECT_EQ(first_version2_content(t), "meta.batch");
  t = base;
  t.steps[0].ops[3].batch = 2;
  EXPECT_EQ(first_version2_content(t), "steps[0].ops[3] (attn)");
  t = base;
  t.steps[0].ops[3].mask = AttentionMask::branches;
  EXPECT_EQ(required_version(t), 2);
  t = base;
  Op sync;
  sync.kind = OpKind::host_sync;
  sync.name = "host_sync";
  t.steps[0].ops.push_back(sync);
  EXPECT_EQ(first_version2_content(t), "steps[0].ops[8] (host_sync)");
  EXPECT_NE(trace_to_string(t).find("\"version\": 2,"), std::string::npos);
}

TEST(TraceVersion, VersionTwoFileRoundTripsByteForByte) {
  const Trace t = read_trace(kData + "/tiny_trace_v2.json");
  EXPECT_EQ(required_version(t), 2);
  EXPECT_EQ(t.meta.batch_size(), 2);
  EXPECT_EQ(t.meta.kv_lens, (std::vector<std::int64_t>{1024, 3072}));
  ASSERT_TRUE(t.meta.speculative);
  EXPECT_EQ(t.meta.speculative->parents, (std::vector<int>{-1, 0, 0, 1}));
  const Op& attn = t.steps[0].ops[3];
  EXPECT_EQ(attn.kv_len, 3072);  // the longest request's
  EXPECT_DOUBLE_EQ(attn.kv_len_total(), 4096.0);
  EXPECT_EQ(attn.mask, AttentionMask::tree);
  EXPECT_EQ(t.steps[2].ops[0].mask, AttentionMask::branches);
  EXPECT_EQ(draft_forwards_per_cycle(t), 1);  // num_steps - 1 beside the draft-extend step
  const std::string once = trace_to_string(t);
  EXPECT_EQ(once, rewritten(t));
}

TEST(TraceVersion, VersionTwoFileIsWrittenAsItIsStored) {
  // tests/data/tiny_trace_v2.json is laid out the way the writer lays a trace out.
  const std::string path = kData + "/tiny_trace_v2.json";
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(trace_to_string(read_trace(path)), text);
}
