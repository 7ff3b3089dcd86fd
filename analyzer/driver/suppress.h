// Suppressions as the driver applies them: the frontends' per-line directives
// (ir::Module::suppressions) and file-level `mlsem: ignore-file[...]` comments, with
// the bookkeeping --report-unused-suppressions needs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/finding.h"
#include "engine/engine.h"

namespace mlsem::driver {

// `# mlsem: ignore-file` / `# mlsem: ignore-file[ATT001, FUS]` (`//` in CUDA) anywhere
// in the file: line -> codes (empty: every rule).
std::map<uint32_t, std::vector<std::string>> find_file_suppressions(std::string_view text);

// Drops suppressed findings (a line directive on any line of a finding, or a
// file-level one). Codes match a rule's id or name. With `report_unused`, every
// directive of mlsem's that suppressed nothing, and every code in one that names a
// rule that suppressed nothing, becomes an SUP001 finding; codes of other tools in
// `# noqa` are left alone.
void apply_suppressions(std::vector<Finding>& findings, const SourceFile& file,
                        const std::map<uint32_t, std::vector<std::string>>& line_directives,
                        const Engine& engine, bool report_unused);

}  // namespace mlsem::driver
