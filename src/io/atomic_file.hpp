#pragma once
// Every output file (trace, JSON, CSV, timeline, report, topology) is written through
// write_file_atomic: the content goes to a temporary file beside the target, is flushed, and is
// renamed over the target only when complete. A failing run therefore never leaves a partial
// file and never clobbers an existing one.
#include <string>

namespace eaglesim {

// Throws InputError ("FILE: cannot write ...") when the directory is missing or unwritable.
void write_file_atomic(const std::string& path, const std::string& content);

// Checks up front that `path` can be created (directory exists and is writable), so that a
// long run fails before doing the work rather than after. Throws InputError.
void check_writable(const std::string& path);

// Reads a whole file (gzip-compressed when it ends in .gz and zlib is available).
std::string read_file(const std::string& path);

}  // namespace eaglesim
