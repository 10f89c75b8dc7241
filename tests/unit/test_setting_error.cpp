#include <string>

#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "core/setting.hpp"

namespace eaglesim {
namespace {

std::string shouting(Setting s) { return "<" + std::string(library_name(s)) + ">"; }

TEST(SettingError, NamesTheSettingByTheLibraryNameWithoutANamer) {
  const SettingError e(Setting::kv_len, "expected an integer in [1, 10], got 0");
  EXPECT_STREQ(e.what(), "kv_len: expected an integer in [1, 10], got 0");
  EXPECT_EQ(e.setting(), Setting::kv_len);
  EXPECT_EQ(setting_name(Setting::speculative_num_steps), "speculative_num_steps");
}

TEST(SettingError, TheInstalledNamerSpellsEverySettingInMessages) {
  install_setting_namer(&shouting);
  const SettingError e(Setting::batch, "too big");
  const std::string mention = setting_name(Setting::unfused_add_norm);
  install_setting_namer(nullptr);
  EXPECT_STREQ(e.what(), "<batch>: too big");
  EXPECT_EQ(mention, "<unfused_add_norm>");
  EXPECT_EQ(setting_name(Setting::batch), "batch");  // nullptr restores the library's names
}

TEST(SettingError, EverySettingHasItsOwnLibraryName) {
  std::string seen = "|";
  for (Setting s : kAllSettings) {
    const std::string name(library_name(s));
    EXPECT_NE(name, "?");
    EXPECT_EQ(seen.find("|" + name + "|"), std::string::npos) << name;
    seen += name + "|";
  }
}

}  // namespace
}  // namespace eaglesim
