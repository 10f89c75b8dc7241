#pragma once
// Where the product's data (models/llm, models/topologies, traces) is found: one search order
// for every command. A relative data path REL is looked up under, in order:
//   1. the working directory (REL as given, so a checkout's files win and names stay short);
//   2. $EAGLESIM_DATA_DIR, when set;
//   3. PREFIX/share/eaglesim for an installed binary in PREFIX/bin (`cmake --install`);
//   4. the directory above the executable's (a build directory inside a checkout);
//   5. the source tree this binary was built from.
#include <optional>
#include <string>
#include <vector>

namespace eaglesim {

// The roots above, the working directory as "" (paths under it stay relative), without
// duplicates; roots that do not exist are left out, except $EAGLESIM_DATA_DIR: set to anything
// but a directory it is an InputError (the user asked for it).
std::vector<std::string> data_roots();

// ROOT/rel for the first root where that file exists, nullopt if none.
std::optional<std::string> find_data_file(const std::string& rel);

// ROOT/sub for every root where that directory exists, in search order.
std::vector<std::string> data_dirs(const std::string& sub);

// Joins a root from data_roots() with a relative path ("" + rel is rel itself).
std::string data_path(const std::string& root, const std::string& rel);

}  // namespace eaglesim
