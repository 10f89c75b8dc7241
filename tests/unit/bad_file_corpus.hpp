#pragma once
// Shared by the unit tests of the bad-input corpora (tests/data/bad/ for traces,
// tests/data/bad_acceptance/ for acceptance tables): a directory of malformed files and an
// EXPECTED.tsv listing each file with the message fragment reading it must produce.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/errors.hpp"

namespace eaglesim::test_support {

// (file, fragment) rows of DIR/EXPECTED.tsv; '#' lines and blank lines skipped.
inline std::vector<std::pair<std::string, std::string>> expected_errors(const std::string& dir) {
  std::ifstream in(dir + "/EXPECTED.tsv");
  std::vector<std::pair<std::string, std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto tab = line.find('\t');
    if (tab == std::string::npos) throw std::runtime_error("EXPECTED.tsv line without a tab: " + line);
    rows.emplace_back(line.substr(0, tab), line.substr(tab + 1));
  }
  return rows;
}

// The corpus has at least `min_rows` files and every file in DIR has exactly one line.
inline void expect_corpus_fully_listed(const std::string& dir, std::size_t min_rows) {
  auto rows = expected_errors(dir);
  EXPECT_GE(rows.size(), min_rows);
  std::vector<std::string> listed, on_disk;
  for (const auto& r : rows) listed.push_back(r.first);
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename() != "EXPECTED.tsv") on_disk.push_back(e.path().filename().string());
  std::sort(listed.begin(), listed.end());
  std::sort(on_disk.begin(), on_disk.end());
  EXPECT_EQ(listed, on_disk) << "every file in " << dir << " needs exactly one line in EXPECTED.tsv";
}

// read(path) throws one InputError per file that starts with the path and holds the fragment.
template <class Read>
void expect_each_file_rejected(const std::string& dir, Read read) {
  for (const auto& [file, fragment] : expected_errors(dir)) {
    const std::string path = dir + "/" + file;
    SCOPED_TRACE(file);
    try {
      read(path);
      ADD_FAILURE() << file << " was accepted";
    } catch (const InputError& e) {
      std::string what = e.what();
      EXPECT_EQ(what.rfind(path + ": ", 0), 0u) << "message does not start with the file: " << what;
      EXPECT_NE(what.find(fragment), std::string::npos) << "expected fragment: " << fragment << "\ngot: " << what;
    }
  }
}

}  // namespace eaglesim::test_support
