// Across a project: a Python finding inside an undecorated top-level class or function
// that nothing the project runs reaches is in code the project never builds or calls, and
// is demoted as `unused` (docs/PATTERNS.md, "Context"); and where the project compiles
// its model, a finding whose fix torch.compile makes is demoted as `compiled`. What runs: module-level code, a
// decorated (registered) definition, a configuration file, a script (a module nothing
// imports, which may be run from outside); what it reaches: the top-level definitions
// those name, then the ones those definitions name, and so on (comments and docstrings
// don't count; other strings do: a registry may name a class by its string), less the
// mentions in a branch on a literal-default parameter that no value the project gives it
// takes (python/switches.h). The finding's
// own module must be one another file imports. The root is the nearest directory above the
// file holding .git, pyproject.toml, setup.py, setup.cfg or mlsem.toml; a file in no marked
// project, or a project of more than 20,000 files or 256 MB, is left alone. This runs after
// every file is analyzed, on the findings alone, so per-file analysis and its cache stay per
// file, and whatever subset of the project is analyzed, a finding gets the same answer. The
// editor server (one document at a time, analyze_source) does not run it.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "core/finding.h"

namespace mlsem::driver {

// What the pass demotes.
struct ProjectPass {
  bool unused = true;  // findings in top-level definitions nothing the project runs reaches
  // Python findings in the project's demonstrations: a file under an examples/, tutorials/,
  // docs/, notebooks/ or demos/ directory of the project (not a package), or one of
  // three or more train*.py scripts at the root of a project that ships a package
  // (pyproject.toml or setup.py): scripts that show a library off, whose speed is not their
  // point.
  bool examples = true;
  // Rules whose findings are demoted as `compiled` where the project, outside its tests,
  // hands its model (or a part of it: a block, an encoder) to torch.compile by default:
  // the rules whose fix is what Inductor does by itself (their demote_in lists `compiled`).
  // Behind a switch that is off unless set, the finding stays and gains an evidence line
  // naming the switch (project.h, CompileSite::under).
  std::set<std::string, std::less<>> compiled_rules;
  // Rules whose findings are demoted as `fallback` where every use the project makes of
  // their top-level definition sits in a branch beside a fused implementation
  // (`if fusion: MixedFusedRMSNorm else: RMSNorm`), or as `unused` where only subclasses
  // that override the finding's method name it (their demote_in lists `fallback`).
  std::set<std::string, std::less<>> fallback_rules;
  // Rules (their `configured_by`) whose findings are demoted as `configured` where a Python
  // file of the project mentions one of the settings: the project makes that choice in
  // one place (a setup module), not in each script.
  std::map<std::string, std::vector<std::string>, std::less<>> configured_by;
};

struct Demoted {
  size_t unused = 0, fallback = 0, compiled = 0, example = 0, configured = 0;
  size_t total() const { return unused + fallback + compiled + example + configured; }
};

// Demotes the findings of `findings` in the project's demonstrations, then those that sit
// in unreferenced top-level definitions, then
// those of `pass.fallback_rules` in definitions the project uses only as fallbacks of fused
// implementations, then (as unused) those under a branch on an attribute the project only
// ever sets to literals that do not take it, then those of `pass.compiled_rules` in a
// project that compiles its model; returns how many of each. Reads the project's files (an unreadable one is skipped).
Demoted demote_by_project(std::vector<Finding>& findings, const ProjectPass& pass);

}  // namespace mlsem::driver
