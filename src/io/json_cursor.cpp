#include "io/json_cursor.hpp"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.hpp"
#include "io/atomic_file.hpp"
#include "io/strict_json.hpp"

namespace eaglesim {

nlohmann::json JsonCursor::parse_text(const std::string& text, const std::string& file) {
  if (text.empty()) throw InputError::at(file, "", "expected JSON, found an empty file");
  try {
    return parse_json_strict(text, file);  // a key given twice is an InputError, not a silent overwrite
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is the offset where parsing stopped; turn it into line:column for humans.
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') { ++line; col = 1; } else { ++col; }
    }
    std::string what = e.byte >= text.size() ? "truncated JSON (unexpected end of file)"
                                              : "not valid JSON";
    throw InputError::at(file, "", fmt::format("{} at line {}, column {}", what, line, col));
  } catch (const nlohmann::json::out_of_range& e) {
    // The parser throws out_of_range (not parse_error) for a number literal that does not fit
    // a double, e.g. 1e400 (found by fuzzing: it escaped as an internal error).
    std::string what = e.what();
    auto quote = what.find('\'');
    std::string literal = quote == std::string::npos ? "" : what.substr(quote);
    if (literal.size() > 42) literal = literal.substr(0, 40) + "...'";
    throw InputError::at(file, "", fmt::format("number {} is out of range (beyond what a double holds)",
                                               literal.empty() ? "literal" : literal));
  } catch (const nlohmann::json::exception& e) {
    // Any other complaint of the parser is still a problem with the file, not a bug here.
    throw InputError::at(file, "", fmt::format("not valid JSON ({})", e.what()));
  }
}

nlohmann::json JsonCursor::parse_file(const std::string& file) {
  return parse_text(read_file(file), file);
}

std::string JsonCursor::describe(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return fmt::format("an array of {}", v.size());
    case nlohmann::json::value_t::boolean: return v.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::string: {
      std::string s = v.get<std::string>();
      if (s.size() > 40) s = s.substr(0, 37) + "...";
      return "\"" + s + "\"";
    }
    default: {
      std::string s = v.dump();
      if (s.size() > 40) s = s.substr(0, 37) + "...";
      return s;
    }
  }
}

void JsonCursor::fail(const std::string& expected) const {
  throw InputError::at(file_, path_.empty() ? "(top level)" : path_,
                       fmt::format("expected {}, got {}", expected, describe(*node_)));
}

void JsonCursor::fail_raw(const std::string& message) const {
  throw InputError::at(file_, path_.empty() ? "(top level)" : path_, message);
}

std::string JsonCursor::child_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

void JsonCursor::expect_object() const {
  if (!node_->is_object()) fail("an object");
}
void JsonCursor::expect_array() const {
  if (!node_->is_array()) fail("an array");
}

bool JsonCursor::has(const char* key) const {
  expect_object();
  auto it = node_->find(key);
  return it != node_->end() && !it->is_null();
}

JsonCursor JsonCursor::at(const char* key) const {
  expect_object();
  auto it = node_->find(key);
  if (it == node_->end() || it->is_null())
    throw InputError::at(file_, child_path(key), "missing required field");
  return JsonCursor(*it, file_, child_path(key));
}

std::optional<JsonCursor> JsonCursor::find(const char* key) const {
  expect_object();
  auto it = node_->find(key);
  if (it == node_->end() || it->is_null()) return std::nullopt;
  return JsonCursor(*it, file_, child_path(key));
}

JsonCursor JsonCursor::at(std::size_t index) const {
  expect_array();
  if (index >= node_->size())
    throw InputError::at(file_, fmt::format("{}[{}]", path_, index), "index out of range");
  return JsonCursor((*node_)[index], file_, fmt::format("{}[{}]", path_, index));
}

std::size_t JsonCursor::size() const {
  expect_array();
  return node_->size();
}

std::vector<std::string> JsonCursor::keys() const {
  expect_object();
  std::vector<std::string> out;
  for (auto it = node_->begin(); it != node_->end(); ++it) out.push_back(it.key());
  return out;
}

void JsonCursor::only_keys(std::initializer_list<const char*> allowed) const {
  only_keys(std::vector<std::string>(allowed.begin(), allowed.end()));
}

void JsonCursor::only_keys(const std::vector<std::string>& allowed) const {
  expect_object();
  for (auto it = node_->begin(); it != node_->end(); ++it) {
    bool ok = false;
    for (const auto& a : allowed) ok = ok || it.key() == a;
    if (!ok) {
      throw InputError::at(file_, child_path(it.key()),
                           fmt::format("unknown field (allowed here: {})", fmt::join(allowed, ", ")));
    }
  }
}

std::int64_t JsonCursor::as_int_named(std::int64_t min, std::int64_t max,
                                      const std::string& what, bool what_names_range) const {
  const std::string too_big = what_names_range ? what : fmt::format("{} at most {}", what, max);
  const auto& v = *node_;
  std::int64_t value = 0;
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() &&
        v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      fail(too_big);
    value = v.get<std::int64_t>();
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    // 4096.0 is accepted as 4096; 4096.5, NaN and Inf are not integers.
    if (!std::isfinite(d) || std::floor(d) != d || std::fabs(d) > 9.0e15) fail(what);
    value = static_cast<std::int64_t>(d);
  } else {
    fail(what);
  }
  if (value < min) fail(what);
  if (value > max) fail(too_big);
  return value;
}

std::int64_t JsonCursor::as_int(std::int64_t min, std::int64_t max) const {
  return as_int_named(min, max, fmt::format("an integer in [{}, {}]", min, max), true);
}

double JsonCursor::as_number(double min, double max) const {
  if (!node_->is_number()) fail(fmt::format("a number in [{}, {}]", min, max));
  double d = node_->get<double>();
  if (!std::isfinite(d) || d < min || d > max) fail(fmt::format("a finite number in [{}, {}]", min, max));
  return d;
}

double JsonCursor::as_positive_number(double max) const {
  if (!node_->is_number()) fail("a positive number");
  double d = node_->get<double>();
  if (!std::isfinite(d) || d <= 0) fail("a positive finite number");
  if (d > max) fail(fmt::format("a positive number at most {}", max));
  return d;
}

std::string JsonCursor::as_string() const {
  if (!node_->is_string() || node_->get_ref<const std::string&>().empty()) fail("a non-empty string");
  return node_->get<std::string>();
}

std::string JsonCursor::as_string_allow_empty() const {
  if (!node_->is_string()) fail("a string");
  return node_->get<std::string>();
}

std::string JsonCursor::as_enum(const std::vector<std::string>& choices) const {
  const std::string list = fmt::format("{}", fmt::join(choices, ", "));
  if (!node_->is_string()) fail("one of " + list);
  const auto& s = node_->get_ref<const std::string&>();
  for (const auto& c : choices)
    if (c == s) return s;
  fail("one of " + list);
}

bool JsonCursor::as_bool() const {
  if (!node_->is_boolean()) fail("true or false");
  return node_->get<bool>();
}

}  // namespace eaglesim
