#pragma once
// JSON text -> nlohmann::json, rejecting an object that holds the same key twice.
// nlohmann's own parser keeps the last of two equal keys without a word, so a trace with
// `"m": 4, ..., "m": 4096` would be simulated with whatever value came last; a hand-edited file
// is far more likely to hold a copy-paste slip than an intended override.
#include <string>

#include <nlohmann/json.hpp>

namespace eaglesim {

// Syntax errors surface as nlohmann's own exceptions (parse_error, out_of_range), exactly as from
// nlohmann::json::parse, so that JsonCursor::parse_text translates them in one place. A repeated
// key is an InputError "FILE: PATH: key "K" appears twice", PATH being the object's path in
// JsonCursor's notation (steps[0].ops[3]; "(top level)" for the root).
nlohmann::json parse_json_strict(const std::string& text, const std::string& file);

}  // namespace eaglesim
