#include "io/atomic_file.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef EAGLESIM_HAVE_ZLIB
#include <zlib.h>
#endif

#include <fmt/format.h>

#include "core/errors.hpp"
#include "io/streamed_file.hpp"

namespace eaglesim {

namespace {
// false in the processes of an MPI job other than rank 0 (set_output_files_written).
std::atomic<bool> g_output_files_written{true};

std::string dir_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

void check_writable(const std::string& path) {
  if (path.empty()) throw InputError("output path is empty");
  if (ends_with(path, "/")) throw InputError::at(path, "", "expected a file path, got a directory");
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw InputError::at(path, "", "expected a file path, got a directory");
  std::string dir = dir_of(path);
  if (access(dir.c_str(), W_OK) != 0)
    throw InputError::at(path, "", fmt::format("cannot write here: directory '{}' {}", dir,
                                               errno == ENOENT ? "does not exist" : "is not writable"));
}

namespace {

// Writes `content` to a fresh temporary file beside `path` and returns the temporary's name
// (the same staging as an output written while the command runs, io/streamed_file.hpp).
std::string stage_temporary(const std::string& path, const std::string& content) {
  StreamedFile file(path);
  file.append(content);
  return file.finish();
}

void commit_temporary(const std::string& tmp, const std::string& path) {
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    throw InputError::at(path, "", fmt::format("cannot rename temporary file into place: {}", std::strerror(err)));
  }
}

}  // namespace

void set_output_files_written(bool written) { g_output_files_written = written; }

void write_file_atomic(const std::string& path, const std::string& content) {
  if (!g_output_files_written) {
    check_writable(path);  // the same error as on rank 0, on every rank
    return;
  }
  commit_temporary(stage_temporary(path, content), path);
}

void write_files_atomic(const std::vector<OutputFile>& files) {
  auto remove_prestaged = [&] {
    for (const auto& f : files)
      if (!f.staged.empty()) std::remove(f.staged.c_str());
  };
  std::vector<const OutputFile*> wanted;
  try {
    for (const auto& f : files) {
      if (f.path.empty()) continue;
      for (const OutputFile* w : wanted)
        if (w->path == f.path) throw InputError::at(f.path, "", "given for two outputs: each output needs its own file");
      wanted.push_back(&f);
    }
    for (const OutputFile* f : wanted) check_writable(f->path);
  } catch (...) {
    remove_prestaged();
    throw;
  }
  if (!g_output_files_written) {
    remove_prestaged();
    return;
  }

  std::vector<std::string> staged;
  try {
    for (const OutputFile* f : wanted)
      staged.push_back(f->staged.empty() ? stage_temporary(f->path, f->content) : f->staged);
  } catch (...) {
    for (const auto& tmp : staged) std::remove(tmp.c_str());
    remove_prestaged();
    throw;
  }
  // Renames within one directory do not fail once the temporary exists beside the target and
  // the target is not a directory (checked above); should one fail anyway, the temporaries not
  // yet committed are removed so that nothing is left behind.
  for (std::size_t i = 0; i < staged.size(); ++i) {
    try {
      commit_temporary(staged[i], wanted[i]->path);
    } catch (...) {
      for (std::size_t j = i + 1; j < staged.size(); ++j) std::remove(staged[j].c_str());
      throw;
    }
  }
}

std::string read_file(const std::string& path) {
  // An ifstream opens a directory without complaint and then reads nothing, which would surface
  // as a misleading "empty file".
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw InputError::at(path, "", "expected a file, got a directory");
  if (ends_with(path, ".gz")) {
#ifdef EAGLESIM_HAVE_ZLIB
    gzFile gz = gzopen(path.c_str(), "rb");
    if (!gz) throw InputError::at(path, "", "cannot open file for reading");
    std::string out;
    char chunk[1 << 16];
    for (;;) {
      int n = gzread(gz, chunk, sizeof chunk);
      if (n < 0) {
        gzclose(gz);
        throw InputError::at(path, "", "not a valid gzip file (or truncated)");
      }
      if (n == 0) break;
      out.append(chunk, static_cast<std::size_t>(n));
    }
    int err = 0;
    // gzerror's text belongs to the gzFile: copy it before gzclose frees it.
    const std::string msg = gzerror(gz, &err);
    gzclose(gz);
    if (err == Z_BUF_ERROR)  // zlib's word for a stream that stops before its end
      throw InputError::at(path, "", "truncated gzip file (unexpected end of compressed data)");
    if (err != Z_OK && err != Z_STREAM_END)
      throw InputError::at(path, "", fmt::format("not a valid gzip file: {}", msg));
    return out;
#else
    throw InputError::at(path, "", "gzip input needs zlib, which this build lacks: gunzip the file first");
#endif
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError::at(path, "", "cannot open file for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace eaglesim
