#include "io/streamed_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "io/atomic_file.hpp"

namespace eaglesim {

namespace {
constexpr std::size_t kBufferBytes = 1 << 20;
}

StreamedFile::StreamedFile(std::string path) : path_(std::move(path)) {
  if (path_.empty()) return;
  check_writable(path_);
  tmp_ = path_ + ".tmp-XXXXXX";
  fd_ = mkstemp(tmp_.data());
  if (fd_ < 0)
    throw InputError::at(path_, "", fmt::format("cannot create temporary file: {}", std::strerror(errno)));
  (void)fchmod(fd_, 0644);  // a normal user output, not mkstemp's 0600
  buffer_.reserve(kBufferBytes);
}

StreamedFile::~StreamedFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) std::remove(tmp_.c_str());
}

void StreamedFile::append(std::string_view text) {
  if (fd_ < 0) return;
  if (text.size() >= kBufferBytes) {  // a whole document: written as it is, not copied
    flush();
    write_all(text);
    return;
  }
  buffer_.append(text);
  if (buffer_.size() >= kBufferBytes) flush();
}

void StreamedFile::flush() {
  write_all(buffer_);
  buffer_.clear();
}

void StreamedFile::write_all(std::string_view text) {
  std::size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd_, text.data() + off, text.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError::at(path_, "", fmt::format("write failed: {}", std::strerror(errno)));
    }
    off += static_cast<std::size_t>(n);
  }
}

std::string StreamedFile::finish() {
  if (fd_ < 0) return {};
  flush();
  const int fd = fd_;
  fd_ = -1;
  // close() is where NFS and full disks report deferred write errors.
  if (::close(fd) != 0) throw InputError::at(path_, "", fmt::format("close failed: {}", std::strerror(errno)));
  std::string tmp = std::move(tmp_);
  tmp_.clear();
  return tmp;
}

}  // namespace eaglesim
