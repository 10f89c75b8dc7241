// Every library setting has a command-line flag, and the flag is one the commands accept: the
// library's messages name settings through the CLI's namer, so a message can only name a flag the
// user can type.
#include <cctype>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "cli/setting_flags.hpp"
#include "cli_helpers.hpp"
#include "core/setting.hpp"

namespace eaglesim {
namespace {

std::string all_help() {
  std::string help;
  for (const char* cmd : {"gen", "inspect", "run", "import kineto", "sweep", "bench-comm", "calibrate", "fidelity"}) {
    const test::CliResult r = test::run_cli(std::string(cmd) + " --help");
    EXPECT_EQ(r.exit_code, 0) << cmd << ": " << r.err;
    help += r.out + "\n";
  }
  return help;
}

bool names_flag(const std::string& help, const std::string& flag) {
  for (std::size_t at = help.find(flag); at != std::string::npos; at = help.find(flag, at + 1)) {
    const std::size_t end = at + flag.size();
    const bool word_end = end == help.size() || !(std::isalnum(static_cast<unsigned char>(help[end])) || help[end] == '-');
    if (word_end) return true;
  }
  return false;
}

TEST(SettingFlags, EverySettingIsAFlagOfSomeCommand) {
  const std::string help = all_help();
  std::set<std::string> seen;
  for (Setting s : kAllSettings) {
    const std::string flag = cli::flag_of(s);
    EXPECT_EQ(flag.rfind("--", 0), 0u) << library_name(s) << " -> " << flag;
    EXPECT_TRUE(seen.insert(flag).second) << flag << " spells two settings";
    EXPECT_TRUE(names_flag(help, flag)) << flag << " (" << library_name(s) << ") is in no command's --help";
  }
}

TEST(SettingFlags, LibraryMessagesNameTheFlagUnderTheCli) {
  const test::CliResult r = test::run_cli("gen --model models/llm/llama-3.1-8b.json --tp 0 --tokens 4 -o /dev/null");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--tp: expected an integer in [1, "), std::string::npos) << r.err;
}

}  // namespace
}  // namespace eaglesim
