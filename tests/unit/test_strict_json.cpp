// Every JSON input is parsed by parse_json_strict (through JsonCursor::parse_text/parse_file):
// an object that holds the same key twice is an InputError naming the file, the object's path
// and the key; everything else parses exactly as nlohmann::json::parse would.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "io/atomic_file.hpp"
#include "io/json_cursor.hpp"
#include "io/strict_json.hpp"

using namespace eaglesim;

namespace {

// The message parse_text gives for `text`, or "(accepted)".
std::string error_of(const std::string& text) {
  try {
    JsonCursor::parse_text(text, "in.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

struct SyntaxError {
  int id = 0;             // nlohmann's exception id; 0: parsed
  std::size_t byte = 0;   // where parsing stopped (parse_error only)
};

template <class Parse>
SyntaxError syntax_error_of(Parse&& parse) {
  try {
    const nlohmann::json doc = parse();
  } catch (const nlohmann::json::parse_error& e) {
    return {e.id, e.byte};
  } catch (const nlohmann::json::exception& e) {
    return {e.id, 0};
  }
  return {};
}

}  // namespace

TEST(StrictJson, DuplicateKeyAtTopLevel) {
  EXPECT_EQ(error_of(R"({"format": "eaglesim-trace", "version": 1, "format": "x"})"),
            "in.json: (top level): key \"format\" appears twice");
}

TEST(StrictJson, DuplicateKeyInsideAnOp) {
  EXPECT_EQ(error_of(R"({"meta": {"tp": 2},
                         "steps": [{"name": "verify",
                                    "ops": [{"kind": "gemm", "m": 4, "n": 8, "k": 8},
                                            {"kind": "gemm", "m": 4, "n": 8, "m": 16, "k": 8}]}]})"),
            "in.json: steps[0].ops[1]: key \"m\" appears twice");
}

TEST(StrictJson, DuplicateKeyInAnArrayOfObjectsAndDeeper) {
  // The path counts the elements before the offending one, whatever their kind.
  EXPECT_EQ(error_of(R"([1, "two", [3], {"a": 1}, {"b": 1, "b": 1}])"), "in.json: [4]: key \"b\" appears twice");
  EXPECT_EQ(error_of(R"({"links": {"pcie": {"bw_gbs": 64}, "uplink": {"bw_gbs": 52, "latency_us": 1, "bw_gbs": 26}}})"),
            "in.json: links.uplink: key \"bw_gbs\" appears twice");
  EXPECT_EQ(error_of(R"({"calibration": {"gemm": [{"m": 4}, {"m": 8, "args": {"x": [], "x": {}}}]}})"),
            "in.json: calibration.gemm[1].args: key \"x\" appears twice");
  // An empty key is a key like any other.
  EXPECT_EQ(error_of(R"({"": 1, "": 2})"), "in.json: (top level): key \"\" appears twice");
}

TEST(StrictJson, SameKeyInDifferentObjectsIsFine) {
  EXPECT_EQ(error_of(R"({"m": 1, "ops": [{"m": 1}, {"m": 2}], "inner": {"m": {"m": 3}}})"), "(accepted)");
}

TEST(StrictJson, ValidDocumentParsesAsNlohmannDoes) {
  const std::string text = R"({"null": null, "t": true, "f": false, "neg": -42, "big": 18446744073709551615,
    "pi": 3.25, "exp": -1.5e-7, "s": "a\"b\\c\u00e9\n", "empty_o": {}, "empty_a": [],
    "nested": [[1, [2, {"k": [3]}]], {"deep": {"deeper": {"deepest": "x"}}}], "z": 0})";
  const nlohmann::json strict = JsonCursor::parse_text(text, "in.json");
  EXPECT_EQ(strict, nlohmann::json::parse(text));
  EXPECT_TRUE(strict.at("big").is_number_unsigned());
  EXPECT_TRUE(strict.at("neg").is_number_integer());
  EXPECT_EQ(strict.at("s").get<std::string>(), "a\"b\\c\xc3\xa9\n");
  // Scalars and arrays at the top level too.
  EXPECT_EQ(parse_json_strict("7", "in.json"), nlohmann::json(7));
  EXPECT_EQ(parse_json_strict("[1, {\"a\": null}]", "in.json"), nlohmann::json::parse("[1, {\"a\": null}]"));
}

TEST(StrictJson, ShippedFilesParseAsNlohmannDoes) {
  // Presets, a shipped trace, a model config and a real profiler file: same document either way.
  const std::string repo = EAGLESIM_REPO;
  std::vector<std::string> files{repo + "/traces/llama-3.1-8b_tp2_t4.json", repo + "/models/llm/llama-3.1-8b.json",
                                 std::string(EAGLESIM_TEST_DATA) + "/kineto/llama8b_tp2_t4_nccl_rank0.json.gz"};
  for (const auto& e : std::filesystem::directory_iterator(repo + "/models/topologies"))
    files.push_back(e.path().string());
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    const std::string text = read_file(file);
    EXPECT_EQ(JsonCursor::parse_text(text, file), nlohmann::json::parse(text));
  }
}

TEST(StrictJson, SyntaxErrorsAreNlohmannsOwn) {
  // Same exception id and byte offset as nlohmann::json::parse, so parse_text turns them into the
  // same "line L, column C" messages as before the duplicate check.
  for (const std::string text : {"{\"a\": 1,", "{\"a\": 1} x", "[1, 2", "{\"a\" 1}", "[NaN]", "\"\\x\"", "[1e400]", " "}) {
    SCOPED_TRACE(text);
    const SyntaxError nlohmann_error = syntax_error_of([&] { return nlohmann::json::parse(text); });
    const SyntaxError strict_error = syntax_error_of([&] { return parse_json_strict(text, "in.json"); });
    EXPECT_NE(nlohmann_error.id, 0) << "not an error for nlohmann";
    EXPECT_EQ(strict_error.id, nlohmann_error.id);
    EXPECT_EQ(strict_error.byte, nlohmann_error.byte);
  }
  EXPECT_EQ(error_of("{\"a\" 1}"), "in.json: not valid JSON at line 1, column 6");
}
