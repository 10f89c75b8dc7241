// Every malformed trace in tests/data/bad/ must be rejected by read_trace with one InputError
// that names the file and says what was wrong (the fragment listed in EXPECTED.tsv).
#include <gtest/gtest.h>

#include <string>

#include "bad_file_corpus.hpp"
#include "trace/trace_json.hpp"

using namespace eaglesim;

namespace {

const std::string kBadDir = std::string(EAGLESIM_TEST_DATA) + "/bad";

}  // namespace

TEST(BadTraces, CorpusIsLargeAndFullyListed) { test_support::expect_corpus_fully_listed(kBadDir, 25); }

TEST(BadTraces, EachFileGivesItsMessage) {
  test_support::expect_each_file_rejected(kBadDir, [](const std::string& path) { read_trace(path); });
}
