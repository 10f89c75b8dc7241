#pragma once
// JsonCursor: a JSON node together with the file it came from and its path inside that file,
// so that every validation failure names FILE: PATH: what was expected, what was found.
// All readers (trace, topology, HF config, Kineto) go through it; none reports errors by hand.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace eaglesim {

class JsonCursor {
 public:
  JsonCursor(const nlohmann::json& node, std::string file, std::string path = "")
      : node_(&node), file_(std::move(file)), path_(std::move(path)) {}

  // Reads and parses a whole file; throws InputError naming the file on I/O or syntax errors
  // and on an object that holds the same key twice (see io/strict_json.hpp).
  static nlohmann::json parse_file(const std::string& file);
  static nlohmann::json parse_text(const std::string& text, const std::string& file);

  const nlohmann::json& json() const { return *node_; }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }

  // Structure.
  void expect_object() const;
  void expect_array() const;
  bool has(const char* key) const;
  JsonCursor at(const char* key) const;             // required member of an object
  std::optional<JsonCursor> find(const char* key) const;  // optional member (null counts as absent)
  JsonCursor at(std::size_t index) const;           // element of an array
  std::size_t size() const;                         // array length (expects an array)
  std::vector<std::string> keys() const;            // object keys in file order
  // Rejects members not in `allowed`, naming the first unknown one and what is allowed.
  void only_keys(std::initializer_list<const char*> allowed) const;
  void only_keys(const std::vector<std::string>& allowed) const;

  // Scalars. Ranges are inclusive; the message names the range.
  std::int64_t as_int(std::int64_t min, std::int64_t max) const;
  std::int64_t as_positive_int(std::int64_t max = (std::int64_t{1} << 50)) const {
    return as_int_named(1, max, "a positive integer");
  }
  std::int64_t as_nonnegative_int(std::int64_t max = (std::int64_t{1} << 50)) const {
    return as_int_named(0, max, "a non-negative integer");
  }
  double as_number(double min, double max) const;   // finite number within [min, max]
  double as_positive_number(double max = 1e18) const;
  std::string as_string() const;                    // non-empty string
  std::string as_string_allow_empty() const;
  std::string as_enum(const std::vector<std::string>& choices) const;
  bool as_bool() const;

  [[noreturn]] void fail(const std::string& expected) const;  // "expected X, got <found>"
  [[noreturn]] void fail_raw(const std::string& message) const;

  // Short description of a JSON value for messages: -4, "abc", an object, an array of 3, null.
  static std::string describe(const nlohmann::json& value);

 private:
  // `what_names_range`: `what` already states min and max, so values past max need no "at most".
  std::int64_t as_int_named(std::int64_t min, std::int64_t max, const std::string& what,
                            bool what_names_range = false) const;
  std::string child_path(const std::string& key) const;
  const nlohmann::json* node_;
  std::string file_;
  std::string path_;
};

}  // namespace eaglesim
