#pragma once
// The stylesheet and script every HTML report embeds. Kept as C++ raw strings so the report is
// one self-contained file: no CDN, no web fonts, nothing fetched. The script draws every chart
// as inline SVG from the JSON embedded in the page (<script type="application/json"
// id="eaglesim-data">), tagging each drawn series with data-series and each mark with its
// value (data-x, data-y, data-value) so tests can read back what was drawn.
namespace eaglesim::html {

extern const char* const kStyle;
extern const char* const kScript;

}  // namespace eaglesim::html
