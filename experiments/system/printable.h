#pragma once
// Text from files, made safe to print or to name a file with: a record, a
// marker file or a log may hold terminal escape sequences (ESC, CSI) that
// would rewrite the screen, retitle the window or fake a line of output when
// printed raw, and a label may hold '/' and '..'.

#include <string>
#include <string_view>

namespace pln::exp {

/// `text` with every control character (C0, DEL, C1) and every byte that is
/// not part of well-formed UTF-8 written as visible `\xNN`; a tab stays a tab
/// unless `keep_tabs` is false. A newline is escaped too: one printed value
/// stays on one line.
std::string printable(std::string_view text, bool keep_tabs = false);

/// `text` in a fixed alphabet for a part of a file name: every character
/// but ASCII letters and digits becomes '_', so that no label from a record
/// can name a directory, climb out of one or hide a file.
std::string file_name_part(std::string_view text);

}  // namespace pln::exp
