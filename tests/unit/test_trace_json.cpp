#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "io/json_cursor.hpp"
#include "trace/trace_json.hpp"

using namespace eaglesim;

TEST(TraceJson, ReadsTinyTrace) {
  Trace t = read_trace(std::string(EAGLESIM_TEST_DATA) + "/tiny_trace.json");
  EXPECT_EQ(t.meta.model, "tiny");
  EXPECT_EQ(t.meta.tp, 2);
  ASSERT_EQ(t.steps.size(), 1u);
  const auto& ops = t.verify().ops;
  ASSERT_EQ(ops.size(), 8u);
  EXPECT_EQ(ops[2].kind, OpKind::gemm);
  EXPECT_EQ(ops[2].n, 3072);
  EXPECT_DOUBLE_EQ(ops[2].flops(), 2.0 * 4 * 3072 * 4096);
  EXPECT_EQ(ops[5].bytes, 32768);
  EXPECT_EQ(ops[5].site, "attn_out");
  EXPECT_DOUBLE_EQ(*ops[7].us, 3.5);
}

TEST(TraceJson, WriteReadWriteIsByteIdentical) {
  Trace t = read_trace(std::string(EAGLESIM_TEST_DATA) + "/tiny_trace.json");
  t.verify();
  t.steps[0].ops[7].us = 0.1 + 0.2;  // a double that needs all 17 digits
  std::string a = trace_to_string(t);
  Trace back = parse_trace(JsonCursor::parse_text(a, "mem.json"), "mem.json");
  std::string b = trace_to_string(back);
  EXPECT_EQ(a, b);
}

TEST(TraceJson, ErrorNamesFilePathAndValue) {
  auto doc = nlohmann::json::parse(R"({"format":"eaglesim-trace","version":1,
    "meta":{"model":"m","tp":1,"tokens":1,"dtype":"bf16","source":"generated"},
    "steps":[{"name":"verify","ops":[{"kind":"allreduce","name":"ar","bytes":-4,"dtype":"bf16"}]}]})");
  try {
    parse_trace(doc, "kimi.json");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "kimi.json: steps[0].ops[0].bytes: expected a positive integer, got -4");
  }
}
