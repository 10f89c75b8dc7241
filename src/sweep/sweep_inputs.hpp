#pragma once
// Turning sweep flags into grid axes: integer ranges ("1..8", "1,2,4"), number lists, model
// names resolved like topology presets (models/llm/NAME.json), topology names, paths and globs,
// and the EAGLE-3 head that goes with each model. Every problem is an InputError naming the
// flag and what was expected.
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace eaglesim {

// "1..8", "1,2,4,8", "1,4..6". Sorted ascending, duplicates removed; each in [min, max].
std::vector<int> parse_int_axis(const std::string& flag, const std::string& text, int min, int max);
// "0.5,0.7": sorted ascending, duplicates removed; each finite and in [min, max].
std::vector<double> parse_number_list(const std::string& flag, const std::string& text, double min, double max);
// "bf16,fp8": in the order given, duplicates removed.
std::vector<DType> parse_dtype_list(const std::string& flag, const std::string& text);

// Directories searched for presets of kind `sub` ("llm", "topologies"): ./models/SUB, then the
// source tree's models/SUB. Only existing directories are returned.
std::vector<std::string> preset_dirs(const std::string& sub);
// Stems of the *.json files in the preset directories, sorted (for messages and "all").
std::vector<std::string> preset_names(const std::string& sub);

// "kimi-k2-instruct", "kimi-k2-instruct.json" or a path to a config.json.
// InputError (flag, name, the known names) when nothing matches.
std::string resolve_model_path(const std::string& flag, const std::string& name_or_path);

// One --topology item: a preset name, a path, a glob over paths ("my/*.json") or over preset
// names ("8x-*"), or "all" (every preset). Returns paths, sorted within a glob. InputError when
// a name is unknown or a glob matches nothing.
std::vector<std::string> expand_topology_item(const std::string& flag, const std::string& item);

// The EAGLE-3 head beside a model config: MODEL-eagle3.json, then the name with trailing
// "-part"s dropped ("kimi-k2-instruct" -> "kimi-k2-eagle3"). "" when there is none.
std::string find_draft_beside(const std::string& model_path);

}  // namespace eaglesim
