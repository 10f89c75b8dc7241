#pragma once
// Every output file (trace, JSON, CSV, timeline, report, topology) is written through
// write_file_atomic: the content goes to a temporary file beside the target, is flushed, and is
// renamed over the target only when complete. A failing run therefore never leaves a partial
// file and never clobbers an existing one.
#include <string>
#include <vector>

namespace eaglesim {

// Throws InputError ("FILE: cannot write ...") when the directory is missing or unwritable.
void write_file_atomic(const std::string& path, const std::string& content);

// One output of a command that writes several (--json, --csv, --timeline, --report).
struct OutputFile {
  std::string path;
  std::string content;
  // A temporary already holding the content (io/streamed_file.hpp's finish()), renamed into
  // place instead of `content` being staged; removed when the set fails.
  std::string staged = {};
};
// All or none: every content is first written to its own temporary file, and only when all of
// them are complete are they renamed into place. A failure while staging removes the temporary
// files and leaves every target untouched. Empty paths are skipped (an output not requested);
// the same path given twice is an InputError.
void write_files_atomic(const std::vector<OutputFile>& files);

// Under mpirun every process runs the command, and only rank 0 may write its outputs (as only it
// keeps stdout): the other ranks' reports differ in their own notes, and whichever process renamed
// last would win. false: write_file_atomic / write_files_atomic check their arguments as usual,
// then write nothing. Process-wide; true at start.
void set_output_files_written(bool written);

// Checks up front that `path` can be created (directory exists and is writable, and `path` is not
// itself a directory), so that a long run fails before doing the work rather than after.
// Throws InputError.
void check_writable(const std::string& path);

// Reads a whole file (gzip-compressed when it ends in .gz and zlib is available).
std::string read_file(const std::string& path);

}  // namespace eaglesim
