#include "io/strict_json.hpp"

#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace eaglesim {

namespace {

using json = nlohmann::json;

// A SAX handler that builds the document the way nlohmann's own DOM builder does, except that a
// member is inserted with try_emplace, which tells whether the key was already there. That is the
// same one map lookup the default builder makes, so the check costs next to nothing, and the
// Kineto importer can use it on profiler files of many megabytes.
class DuplicateRejectingBuilder {
 public:
  DuplicateRejectingBuilder(json& root, const std::string& file) : root_(root), file_(file) {}

  bool null() { add(nullptr); return true; }
  bool boolean(bool v) { add(v); return true; }
  bool number_integer(json::number_integer_t v) { add(v); return true; }
  bool number_unsigned(json::number_unsigned_t v) { add(v); return true; }
  bool number_float(json::number_float_t v, const json::string_t& /*literal*/) { add(v); return true; }
  bool string(json::string_t& v) { add(std::move(v)); return true; }
  bool binary(json::binary_t& v) { add(std::move(v)); return true; }

  bool start_object(std::size_t /*size unknown for text*/) {
    open_.push_back({add(json::value_t::object), nullptr});
    return true;
  }
  bool start_array(std::size_t /*size unknown for text*/) {
    open_.push_back({add(json::value_t::array), nullptr});
    return true;
  }
  bool end_object() { open_.pop_back(); return true; }
  bool end_array() { open_.pop_back(); return true; }

  bool key(json::string_t& name) {
    Open& object = open_.back();
    auto& members = *object.node->get_ptr<json::object_t*>();
    // try_emplace leaves `name` untouched when the key exists, and inserts nothing.
    auto [member, inserted] = members.try_emplace(std::move(name));
    if (!inserted)
      throw InputError::at(file_, innermost_path(), fmt::format("key \"{}\" appears twice", member->first));
    object.key = &member->first;  // map nodes do not move, so the pointer stays valid
    member_value_ = &member->second;
    return true;
  }

  // Syntax errors keep nlohmann's exception types so that callers translate them as before.
  template <class Exception>
  bool parse_error(std::size_t /*byte*/, const std::string& /*token*/, const Exception& error) {
    throw error;
  }

 private:
  // An object or array whose closing bracket has not been read yet. For objects, `key` names the
  // member being read; for arrays the element being read is always the last one.
  struct Open {
    json* node;
    const std::string* key;
  };

  // Places a value where the parser is: the root, the end of the open array, or the member whose
  // key was just read. Returns where it went (never null).
  template <class Value>
  json* add(Value&& value) {
    if (open_.empty()) {
      root_ = json(std::forward<Value>(value));
      return &root_;
    }
    json& parent = *open_.back().node;
    if (parent.is_array()) {
      auto& items = *parent.get_ptr<json::array_t*>();
      items.emplace_back(std::forward<Value>(value));
      return &items.back();
    }
    *member_value_ = json(std::forward<Value>(value));
    return member_value_;
  }

  // Path of the innermost open object in JsonCursor's notation: meta, steps[0].ops[3], [2].
  std::string innermost_path() const {
    std::string path;
    for (std::size_t i = 0; i + 1 < open_.size(); ++i) {
      const Open& outer = open_[i];
      if (outer.node->is_array()) path += fmt::format("[{}]", outer.node->size() - 1);
      else path += (path.empty() ? "" : ".") + *outer.key;
    }
    return path.empty() ? "(top level)" : path;
  }

  json& root_;
  const std::string& file_;
  std::vector<Open> open_;
  json* member_value_ = nullptr;
};

}  // namespace

json parse_json_strict(const std::string& text, const std::string& file) {
  json root;
  DuplicateRejectingBuilder builder(root, file);
  // strict = true: anything after the top-level value is a parse_error, as in json::parse.
  json::sax_parse(text, &builder, json::input_format_t::json, /*strict=*/true);
  return root;
}

}  // namespace eaglesim
