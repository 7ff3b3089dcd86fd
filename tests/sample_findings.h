// A sample analyzed with the repository's own concepts/, patterns/ and rules/, and the
// findings that cover a line marked by some text of the sample: for the tests that check
// what a finding says (its fix, rewrite, evidence) rather than where it is (golden test).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "driver/driver.h"
#include "engine/engine.h"

namespace mlsem::test_support {

struct SampleFindings {
  std::string text;
  std::vector<Finding> findings;
};

// The engine over the repository's data, loaded once; a load error fails the test.
inline const Engine& repository_engine() {
  static std::vector<FileError> errors;
  static const std::optional<Engine> engine = Engine::load(MLSEM_SOURCE_DIR, errors);
  for (const FileError& e : errors) ADD_FAILURE() << e.path << ":" << e.line << ": " << e.message;
  if (!engine) throw std::runtime_error(std::string("the rules in ") + MLSEM_SOURCE_DIR + " do not load");
  return *engine;
}

// The text of `sample`, a path relative to the repository (samples/python/x.py).
inline std::string read_sample(const std::string& sample) {
  std::string path = std::string(MLSEM_SOURCE_DIR) + "/" + sample;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(s.str().empty()) << "cannot read " << path;
  return s.str();
}

// Options that keep every finding, whatever its confidence.
inline DriverOptions everything() {
  DriverOptions options;
  options.min_confidence = 0.0;
  return options;
}

inline SampleFindings analyze_sample(const std::string& sample, const DriverOptions& options = {}) {
  SampleFindings out;
  std::string path = std::string(MLSEM_SOURCE_DIR) + "/" + sample;
  out.text = read_sample(sample);
  out.findings = analyze_source(SourceFile{path, out.text}, repository_engine(), options).findings;
  return out;
}

inline std::vector<Finding> of_rule(const std::vector<Finding>& findings, const std::string& rule) {
  std::vector<Finding> out;
  for (const Finding& f : findings)
    if (f.rule == rule) out.push_back(f);
  return out;
}

// The 1-based line of the first line of `text` containing `marker`; 0 when none does.
inline uint32_t line_of(const std::string& text, const std::string& marker) {
  size_t at = text.find(marker);
  if (at == std::string::npos) return 0;
  return static_cast<uint32_t>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n') + 1);
}

// The first finding of `rule` whose range covers the line of `text` holding `marker`.
inline const Finding* finding_at(const SampleFindings& a, const std::string& rule, const std::string& marker) {
  uint32_t line = line_of(a.text, marker);
  if (line == 0) return nullptr;
  for (const Finding& f : a.findings)
    if (f.rule == rule && f.range.begin.line <= line && line <= f.range.end.line) return &f;
  return nullptr;
}

// The finding of `rule` at the line holding `marker`, or the one that lists that line as
// a related location (another place of the same problem).
inline const Finding* finding_or_related_at(const SampleFindings& a, const std::string& rule,
                                            const std::string& marker) {
  if (const Finding* f = finding_at(a, rule, marker)) return f;
  uint32_t line = line_of(a.text, marker);
  if (line == 0) return nullptr;
  for (const Finding& f : a.findings)
    if (f.rule == rule)
      for (const Evidence& e : f.evidence)
        if (e.related && e.range.begin.line <= line && line <= e.range.end.line) return &f;
  return nullptr;
}

}  // namespace mlsem::test_support
