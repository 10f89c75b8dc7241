#pragma once
// An output written while the command runs (a sweep's CSV, one line per combination), without
// holding it in memory, and still all or nothing: the text goes to a temporary file beside the
// target, which write_files_atomic renames into place with the command's other outputs
// (OutputFile::staged). Destroyed before that, it removes the temporary.
#include <string>
#include <string_view>

namespace eaglesim {

class StreamedFile {
 public:
  // An empty path: an output not requested (append does nothing). Throws InputError when the
  // target cannot be written (io/atomic_file.hpp's check_writable) or the temporary not created.
  explicit StreamedFile(std::string path);
  ~StreamedFile();
  StreamedFile(const StreamedFile&) = delete;
  StreamedFile& operator=(const StreamedFile&) = delete;

  bool wanted() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  void append(std::string_view text);
  // Flushes and closes the temporary and returns its name, now the caller's to rename or remove
  // (write_files_atomic does both). Throws InputError on a write or close failure.
  std::string finish();

 private:
  void flush();
  void write_all(std::string_view text);
  std::string path_;
  std::string tmp_;
  std::string buffer_;
  int fd_ = -1;
};

}  // namespace eaglesim
