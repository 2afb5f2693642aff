#pragma once
// Where a tensor's features are: the layouts of the Parallel LN family,
// without LibTorch (the stable-ABI build of the Python package reads them
// too). options.h adds the functions that throw LibTorch's error.

#include <cctype>
#include <cstdint>
#include <optional>
#include <string_view>

namespace pln {

/// Where the feature (channel) axis is, declared by the caller, never guessed
/// from sizes. `dim` of the original module picks kNC (2), kNTC (3) or kNCHW (4);
/// the other two are reached through the `layout` override.
enum class Layout {
  kNC,    ///< [N, C]          (MLP batch)
  kNTC,   ///< [N, T, C]       (tokens, features last)
  kNCHW,  ///< [N, C, H, W]    (normalised per pixel along axis 1)
  kNHWC,  ///< [N, H, W, C]    (channels-last data stored as such)
  kNCL,   ///< [N, C, L]       (sequences, channels first)
};

namespace layouts {

/// "nc", "ntc", "nchw", "nhwc" or "ncl" (any case) as a layout; none for anything else.
inline std::optional<Layout> parse(std::string_view name) {
  constexpr std::pair<std::string_view, Layout> kNames[] = {
      {"nc", Layout::kNC}, {"ntc", Layout::kNTC}, {"nchw", Layout::kNCHW}, {"nhwc", Layout::kNHWC},
      {"ncl", Layout::kNCL}};
  for (const auto& [known, layout] : kNames) {
    if (known.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < name.size(); ++i)
      same = same && std::tolower(static_cast<unsigned char>(name[i])) == known[i];
    if (same) return layout;
  }
  return std::nullopt;
}

/// "NC", "NTC", ...
inline const char* name(Layout layout) {
  switch (layout) {
    case Layout::kNC: return "NC";
    case Layout::kNTC: return "NTC";
    case Layout::kNCHW: return "NCHW";
    case Layout::kNHWC: return "NHWC";
    case Layout::kNCL: return "NCL";
  }
  return "?";
}

/// "[N, C]", "[N, T, C]", ...: the shape a layout expects.
inline const char* shape_name(Layout layout) {
  switch (layout) {
    case Layout::kNC: return "[N, C]";
    case Layout::kNTC: return "[N, T, C]";
    case Layout::kNCHW: return "[N, C, H, W]";
    case Layout::kNHWC: return "[N, H, W, C]";
    case Layout::kNCL: return "[N, C, L]";
  }
  return "?";
}

/// Rank a tensor must have in `layout`.
inline int64_t rank(Layout layout) {
  switch (layout) {
    case Layout::kNC: return 2;
    case Layout::kNTC:
    case Layout::kNCL: return 3;
    case Layout::kNCHW:
    case Layout::kNHWC: return 4;
  }
  return 0;
}

/// Index of the feature axis in `layout`.
inline int64_t channel_axis(Layout layout) {
  return layout == Layout::kNCHW || layout == Layout::kNCL ? 1 : rank(layout) - 1;
}

}  // namespace layouts
}  // namespace pln
