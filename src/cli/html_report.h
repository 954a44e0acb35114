// The HTML report beside a command's JSON (`kforge bench`, `kforge optimize`): rendered by
// `python3 -m kforge.report` (python/kforge/report.py, matplotlib). A failure to render is a warning;
// the JSON is written before and never depends on it.
#pragma once

#include <filesystem>

namespace kforge::cli {

// Renders `json` into `html`, then prints "wrote HTML" (stdout) or a warning (stderr) naming the command.
// Set KFORGE_HTML_REPORT=0 to skip it (the torch.compile backend does, for its many small plans).
void write_html_report(const std::filesystem::path& json, const std::filesystem::path& html, const char* command);

}  // namespace kforge::cli
