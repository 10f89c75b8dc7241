#pragma once
// One op of the native trace format, read and written (docs/trace-format.md, "Ops"). The reader
// knows the file's version and meta: a version-2 kind or field in a version-1 file is an error
// naming it, and an attention op's tree mask needs the meta's verify tree.
#include <nlohmann/json.hpp>

#include "io/json_cursor.hpp"
#include "trace/op.hpp"
#include "trace/trace.hpp"

namespace eaglesim {

Op parse_op(const JsonCursor& c, int version, const TraceMeta& meta);
DType read_dtype(const JsonCursor& c);
nlohmann::ordered_json op_to_json(const Op& op);

// A version-2 field or value met in a version-1 file: "PATH: needs version 2 (...)".
[[noreturn]] void fail_needs_version2(const JsonCursor& c, const std::string& what);

}  // namespace eaglesim
