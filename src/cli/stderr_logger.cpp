#include "cli/stderr_logger.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace eaglesim::cli {

void install_stderr_logger() {
  auto logger = spdlog::get("eaglesim");
  if (!logger) logger = spdlog::stderr_color_mt("eaglesim");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%^%l%$: %v");
  spdlog::set_level(spdlog::level::warn);
}

}  // namespace eaglesim::cli
