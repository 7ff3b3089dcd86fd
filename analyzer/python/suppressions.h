// Inline suppressions in Python comments: `# mlsem: ignore`, `# mlsem: ignore[ATT001, FUS002]`,
// `# noqa`, `# noqa: ATT001`. Found by a text scan, not a tree walk (comments are
// rare; the scan runs at memchr speed).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mlsem::python {

// Line (1-based) -> rule codes; an empty list suppresses every rule on that line.
std::map<uint32_t, std::vector<std::string>> find_suppressions(std::string_view text);

}  // namespace mlsem::python
