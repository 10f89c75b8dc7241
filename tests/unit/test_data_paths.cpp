// The data search order: the working directory first (names stay relative), then
// $EAGLESIM_DATA_DIR, which must name a directory when set.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/errors.hpp"
#include "io/data_paths.hpp"

namespace eaglesim {
namespace {

// Sets EAGLESIM_DATA_DIR for one test and restores the environment after it.
struct DataDirEnv {
  explicit DataDirEnv(const std::string& value) { setenv("EAGLESIM_DATA_DIR", value.c_str(), 1); }
  ~DataDirEnv() { unsetenv("EAGLESIM_DATA_DIR"); }
};

TEST(DataPaths, WorkingDirectoryComesFirstAsARelativeRoot) {
  const auto roots = data_roots();
  ASSERT_FALSE(roots.empty());
  EXPECT_EQ(roots.front(), "");
  EXPECT_EQ(data_path("", "models/llm"), "models/llm");
  EXPECT_EQ(data_path("/opt/x", "models/llm"), "/opt/x/models/llm");
}

TEST(DataPaths, DataDirIsSearchedBeforeTheInstalledAndSourceTrees) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "eaglesim-data-dir-test";
  std::filesystem::create_directories(dir / "models" / "topologies");
  std::ofstream(dir / "models" / "topologies" / "only-here.json") << "{}";
  {
    DataDirEnv env(dir.string());
    const auto roots = data_roots();
    ASSERT_GE(roots.size(), 2u);
    EXPECT_EQ(roots[1], dir.lexically_normal().string());
    EXPECT_EQ(find_data_file("models/topologies/only-here.json"),
              (dir / "models" / "topologies" / "only-here.json").string());
  }
  EXPECT_FALSE(find_data_file("models/topologies/only-here.json").has_value());
  std::filesystem::remove_all(dir);
}

TEST(DataPaths, DataDirThatIsNotADirectoryIsAnInputError) {
  DataDirEnv env("/nonexistent/eaglesim-data");
  try {
    data_roots();
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("EAGLESIM_DATA_DIR=/nonexistent/eaglesim-data: expected a directory"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace eaglesim
