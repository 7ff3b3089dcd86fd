// Across a project: a Python finding inside an undecorated top-level class or function
// that nothing else in its project names (no Python or configuration file under the
// project's root mentions it outside its own definition), in a module that another file
// of the project imports, is in code the project never builds or calls, and is demoted
// as `unused` (docs/PATTERNS.md, "Context"). A script, or a module nothing imports yet,
// may be run or used from outside and is left alone. The root is
// the nearest directory above the file holding .git, pyproject.toml, setup.py, setup.cfg
// or mlsem.toml; a file in no marked project, or a project of more than 20,000 files or
// 256 MB, is left alone. This runs after every file is analyzed, on the findings alone,
// so per-file analysis and its cache stay per file, and whatever subset of the project is
// analyzed, a finding gets the same answer. The editor server (one document at a time,
// analyze_source) does not run it.
#pragma once

#include <string>
#include <vector>

#include "core/finding.h"

namespace mlsem::driver {

// Demotes the findings of `findings` that sit in unreferenced top-level definitions;
// returns how many it demoted. Reads the project's files (an unreadable one is skipped).
size_t demote_unreferenced(std::vector<Finding>& findings);

}  // namespace mlsem::driver
