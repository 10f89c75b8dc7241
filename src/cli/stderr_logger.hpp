#pragma once
// Every executable logs to stderr, so that stdout carries only results (tables, JSON lines that
// scripts parse). spdlog's own default logger writes to stdout, hence one place that replaces it.
namespace eaglesim::cli {

// Makes an "eaglesim" logger on stderr the default: pattern "level: message", level warn.
void install_stderr_logger();

}  // namespace eaglesim::cli
