// write_file_atomic / write_files_atomic: all or none, never a partial file, never a temporary
// left behind, existing targets untouched on failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/errors.hpp"
#include "io/atomic_file.hpp"

namespace fs = std::filesystem;
using namespace eaglesim;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "eaglesim-atomic-XXXXXX").string();
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path); }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST(AtomicFile, WritesAndReplaces) {
  TempDir d;
  write_file_atomic(d.path + "/a.txt", "one");
  write_file_atomic(d.path + "/a.txt", "two");
  EXPECT_EQ(slurp(d.path + "/a.txt"), "two");
  EXPECT_EQ(d.names(), std::vector<std::string>{"a.txt"});
}

TEST(AtomicFile, RejectsDirectoriesAndMissingDirectories) {
  TempDir d;
  EXPECT_THROW(write_file_atomic(d.path, "x"), InputError);
  EXPECT_THROW(write_file_atomic(d.path + "/sub/", "x"), InputError);
  EXPECT_THROW(write_file_atomic(d.path + "/missing/a.txt", "x"), InputError);
  EXPECT_THROW(check_writable(""), InputError);
  EXPECT_EQ(d.names(), std::vector<std::string>{});
}

TEST(AtomicFile, GroupWritesAll) {
  TempDir d;
  write_files_atomic({{d.path + "/a", "A"}, {"", "not requested"}, {d.path + "/b", "B"}});
  EXPECT_EQ(slurp(d.path + "/a"), "A");
  EXPECT_EQ(slurp(d.path + "/b"), "B");
  EXPECT_EQ(d.names(), (std::vector<std::string>{"a", "b"}));
}

TEST(AtomicFile, GroupWithUnwritableLaterTargetWritesNothing) {
  TempDir d;
  write_file_atomic(d.path + "/a", "old");
  EXPECT_THROW(write_files_atomic({{d.path + "/a", "new"}, {d.path + "/missing/b", "B"}}), InputError);
  EXPECT_EQ(slurp(d.path + "/a"), "old");
  EXPECT_EQ(d.names(), std::vector<std::string>{"a"});
}

TEST(AtomicFile, GroupFailingWhileStagingRemovesEarlierTemporaries) {
  // The second name passes the up-front checks (its directory is writable) but is too long for
  // its temporary to be created, so the failure comes after the first output was staged.
  TempDir d;
  write_file_atomic(d.path + "/a", "old");
  const std::string long_name = d.path + "/" + std::string(250, 'x');
  EXPECT_THROW(write_files_atomic({{d.path + "/a", "new"}, {long_name, "B"}}), InputError);
  EXPECT_EQ(slurp(d.path + "/a"), "old");
  EXPECT_EQ(d.names(), std::vector<std::string>{"a"});
}

TEST(AtomicFile, GroupRejectsTheSamePathTwice) {
  TempDir d;
  EXPECT_THROW(write_files_atomic({{d.path + "/a", "1"}, {d.path + "/a", "2"}}), InputError);
  EXPECT_EQ(d.names(), std::vector<std::string>{});
}

TEST(AtomicFile, ReadingADirectoryIsAnInputError) {
  TempDir d;
  try {
    read_file(d.path);
    FAIL() << "a directory was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("expected a file, got a directory"), std::string::npos) << e.what();
  }
}

TEST(AtomicFile, TruncatedGzipIsAnInputErrorWithAReadableMessage) {
  const std::string path = std::string(EAGLESIM_TEST_DATA) + "/bad_inputs/kineto_truncated.json.gz";
#ifdef EAGLESIM_HAVE_ZLIB
  try {
    read_file(path);
    FAIL() << "a truncated gzip file was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated gzip file"), std::string::npos) << e.what();
  }
#else
  EXPECT_THROW(read_file(path), InputError);
#endif
}

// Under mpirun the ranks other than 0 write nothing, but still refuse what rank 0 refuses.
TEST(AtomicFile, ProcessesThatWriteNoOutputsStillCheckThem) {
  TempDir d;
  set_output_files_written(false);
  write_file_atomic(d.path + "/a", "A");
  write_files_atomic({{d.path + "/b", "B"}, {d.path + "/c", "C"}});
  EXPECT_THROW(write_file_atomic(d.path + "/missing/a", "x"), InputError);
  EXPECT_THROW(write_files_atomic({{d.path + "/b", "B"}, {d.path + "/b", "B"}}), InputError);
  EXPECT_EQ(d.names(), std::vector<std::string>{});
  set_output_files_written(true);
  write_file_atomic(d.path + "/a", "A");
  EXPECT_EQ(d.names(), std::vector<std::string>{"a"});
}
