#pragma once
// Typed errors. Library code throws; only cli::run_with_exit_code (cli/exit_code.hpp), which
// every main() calls, turns them into exit codes:
//   InputError  -> 2 (bad file, field, flag or name: the user can fix it)
//   DeviceError -> 3 (no GPU, CUDA/NCCL failure, collective timeout)
//   anything else -> 1 (a bug)
#include <stdexcept>
#include <string>

#include "core/setting.hpp"

namespace eaglesim {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  // "FILE: JSON.PATH: what was expected, what was found"
  static InputError at(const std::string& file, const std::string& path, const std::string& what) {
    std::string msg = file;
    if (!path.empty()) msg += ": " + path;
    msg += ": " + what;
    return InputError(msg);
  }
};

// An InputError about one setting: "SETTING: problem", the setting spelled by setting_name (the
// CLI's flags under the CLI, the library's names elsewhere).
class SettingError : public InputError {
 public:
  SettingError(Setting setting, const std::string& problem)
      : InputError(setting_name(setting) + ": " + problem), setting_(setting) {}
  Setting setting() const { return setting_; }

 private:
  Setting setting_;
};

class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr int kExitOk = 0;
constexpr int kExitBug = 1;
constexpr int kExitInput = 2;
constexpr int kExitDevice = 3;

}  // namespace eaglesim
