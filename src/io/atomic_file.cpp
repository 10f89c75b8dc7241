#include "io/atomic_file.hpp"

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

namespace eaglesim {

namespace {
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
  std::string dir = dir_of(path);
  if (access(dir.c_str(), W_OK) != 0)
    throw InputError::at(path, "", fmt::format("cannot write here: directory '{}' {}", dir,
                                               errno == ENOENT ? "does not exist" : "is not writable"));
  if (ends_with(path, "/")) throw InputError::at(path, "", "expected a file path, got a directory");
}

void write_file_atomic(const std::string& path, const std::string& content) {
  check_writable(path);
  std::string tmp = path + ".tmp-XXXXXX";
  std::string buf = tmp;
  int fd = mkstemp(buf.data());
  if (fd < 0) throw InputError::at(path, "", fmt::format("cannot create temporary file: {}", std::strerror(errno)));
  std::size_t off = 0;
  while (off < content.size()) {
    ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      std::remove(buf.c_str());
      throw InputError::at(path, "", fmt::format("write failed: {}", std::strerror(err)));
    }
    off += static_cast<std::size_t>(n);
  }
  // Files are normal user outputs: make them 0644 rather than mkstemp's 0600.
  (void)fchmod(fd, 0644);
  if (::close(fd) != 0) {
    std::remove(buf.c_str());
    throw InputError::at(path, "", "close failed");
  }
  if (std::rename(buf.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(buf.c_str());
    throw InputError::at(path, "", fmt::format("cannot rename temporary file into place: {}", std::strerror(err)));
  }
}

std::string read_file(const std::string& path) {
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
    const char* msg = gzerror(gz, &err);
    gzclose(gz);
    if (err != Z_OK && err != Z_STREAM_END)
      throw InputError::at(path, "", fmt::format("gzip error: {}", msg));
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
