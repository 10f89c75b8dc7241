#include "cli/exit_code.hpp"

#include <exception>

#include <spdlog/spdlog.h>

#include "cli/setting_flags.hpp"
#include "core/errors.hpp"

namespace eaglesim::cli {

int run_with_exit_code(CLI::App& app, const std::function<void()>& work) {
  install_setting_namer(&flag_of);  // the library's messages name flags from here on
  try {
    work();
  } catch (const CLI::ParseError& e) {
    // app.exit prints help/version (code 0) or the error with a usage hint (non-zero); every
    // command-line error is the user's to fix, whatever CLI11's own code for it.
    return app.exit(e) == 0 ? kExitOk : kExitInput;
  } catch (const InputError& e) {
    spdlog::error("{}", e.what());
    return kExitInput;
  } catch (const DeviceError& e) {
    spdlog::error("{}", e.what());
    return kExitDevice;
  } catch (const std::exception& e) {
    spdlog::critical("internal error: {}", e.what());
    return kExitBug;
  }
  return kExitOk;
}

}  // namespace eaglesim::cli
