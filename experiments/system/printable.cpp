#include "system/printable.h"

#include <cstdio>

namespace pln::exp {

namespace {

void escape(std::string& out, unsigned char byte) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "\\x%02x", byte);
  out += hex;
}

// The length of the well-formed UTF-8 sequence starting at `at` (RFC 3629:
// no overlong forms, no surrogates, nothing past U+10FFFF); 0 when none.
size_t utf8_length(std::string_view text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) length = 2;
  else if (lead >= 0xe0 && lead <= 0xef) length = 3, low = lead == 0xe0 ? 0xa0 : 0x80, high = lead == 0xed ? 0x9f : 0xbf;
  else if (lead >= 0xf0 && lead <= 0xf4) length = 4, low = lead == 0xf0 ? 0x90 : 0x80, high = lead == 0xf4 ? 0x8f : 0xbf;
  else return 0;
  if (at + length > text.size()) return 0;
  if (byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(at + i) < 0x80 || byte(at + i) > 0xbf) return 0;
  }
  return length;
}

}  // namespace

std::string printable(std::string_view text, bool keep_tabs) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      if ((byte < 0x20 && !(keep_tabs && byte == '\t')) || byte == 0x7f) escape(out, byte);
      else out += static_cast<char>(byte);
      ++i;
      continue;
    }
    const size_t length = utf8_length(text, i);
    // U+0080..U+009F, the C1 controls (CSI among them), are 0xc2 0x80..0x9f.
    if (length == 0 || (byte == 0xc2 && static_cast<unsigned char>(text[i + 1]) < 0xa0)) {
      escape(out, byte);
      ++i;
      continue;
    }
    out.append(text.substr(i, length));
    i += length;
  }
  return out;
}

std::string file_name_part(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const bool letter_or_digit = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    out += letter_or_digit ? c : '_';
  }
  return out;
}

}  // namespace pln::exp
