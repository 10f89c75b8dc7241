#pragma once
// The files every HTML report embeds, compiled into the binary so that a report is one
// self-contained file (no CDN, no web fonts, nothing fetched): our script and stylesheet
// (src/report/assets/) and the uPlot chart library (third_party/uplot/). The definitions are
// generated at build time by cmake/embed_assets.cmake from those files.
#include <cstddef>
#include <string_view>

namespace eaglesim::html {

struct Asset {
  const unsigned char* bytes;  // unsigned: the generated arrays hold UTF-8 bytes above 0x7f
  std::size_t size;
  std::string_view text() const { return {reinterpret_cast<const char*>(bytes), size}; }
};

extern const Asset kReportScript;   // src/report/assets/report.js
extern const Asset kReportStyle;    // src/report/assets/report.css
extern const Asset kUplotScript;    // third_party/uplot/uPlot.iife.min.js
extern const Asset kUplotStyle;     // third_party/uplot/uPlot.min.css
extern const Asset kUplotLicense;   // third_party/uplot/LICENSE

}  // namespace eaglesim::html
