#pragma once
// Comma-separated flag values ("nccl,oneshot", "a.json, b.json", "0,5", "1..4,8"): the one
// splitter behind every such flag, so that all lists accept and reject the same things.
#include <string>
#include <vector>

namespace eaglesim {

// Splits `text` on commas and trims blanks (spaces, tabs) around each item. An empty item (two
// commas in a row, a comma at either end, a blank list) is an InputError naming `flag` and the
// whole list: dropping it silently would run fewer cases than the user meant to ask for.
std::vector<std::string> split_comma_list(const std::string& flag, const std::string& text);

}  // namespace eaglesim
