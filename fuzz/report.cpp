// The report writers, fed a report built from the bytes: hostile strings (quotes,
// newlines, control characters, invalid UTF-8, markup) in paths, messages, rules and
// evidence, odd numbers (NaN confidences, lines past the text), source texts and
// notebook cell maps. Checks as well as runs: the JSON, JSON-lines and SARIF outputs
// parse as JSON, and a baseline written from a report reads back and accepts all of it.
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "driver/driver.h"
#include "engine/engine.h"
#include "fuzz.h"
#include "report/baseline.h"
#include "report/report.h"

namespace mlsem::fuzz {
namespace {

std::string pick(Bytes& in, std::initializer_list<const char*> options) {
  uint8_t b = in.byte();
  if (b < options.size()) return *(options.begin() + b);
  if (b < 128) return *(options.begin() + b % options.size());
  return in.text(64);
}

Range range(Bytes& in, size_t text_size) {
  Range r;
  r.begin.line = in.byte() % 40;
  r.begin.column = in.byte();
  r.end.line = r.begin.line + in.byte() % 4;
  r.end.column = in.byte();
  r.begin_byte = in.u32() % (text_size + 16);
  r.end_byte = r.begin_byte + in.byte();
  return r;
}

bool valid_utf8(std::string_view s) {
  try {
    (void)nlohmann::json(std::string(s)).dump();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

void must_parse(const std::string& text) {
  try {
    nlohmann::json parsed = nlohmann::json::parse(text);
    (void)parsed;
  } catch (const nlohmann::json::exception&) {
    std::abort();
  }
}

}  // namespace

int report(const uint8_t* data, size_t size) {
  static const std::vector<Rule> rules = engine().rules();
  static const std::map<std::string, std::vector<std::string>> tags = report::rule_tags(rules, engine());
  Bytes in(data, size);
  Report rep;
  Sources sources;
  const size_t findings = in.byte() % 8, errors = in.byte() % 4;
  std::vector<std::string> paths;
  for (size_t i = 0, n = 1 + in.byte() % 3; i < n; ++i) {
    std::string path = pick(in, {"model.py", "dir with space/a\"b'c.py", "nb.ipynb", "k.cu", "C:\\w\\x.py", "../up.py", "/abs/%41.py"});
    paths.push_back(path);
    if (in.byte() & 1) {
      SourceFile text{path, in.text(2048)};
      if (path.ends_with(".ipynb")) {  // a cell map of the program's lines, as the driver builds it
        NotebookIndex index;
        uint32_t cell = 1, line = 1;
        for (size_t l = 0, lines = 1 + std::count(text.text.begin(), text.text.end(), '\n'); l < lines; ++l) {
          if (in.byte() & 1) ++cell, line = 1;
          index.cell.push_back(cell);
          index.line.push_back(line++);
        }
        sources.notebooks[path] = std::move(index);
      }
      sources.texts[path] = std::move(text);
    }
  }
  for (size_t i = 0; i < findings; ++i) {
    Finding f;
    const Rule& rule = rules[in.byte() % rules.size()];
    f.rule = in.byte() & 1 ? rule.id : in.text(16);
    f.rule_name = in.byte() & 1 ? rule.name : in.text(32);
    f.concept_id = in.byte() & 1 ? rule.concept_id : in.text(32);
    f.severity = pick(in, {"warning", "error", "info"});
    f.message = in.text(300);
    f.path = paths[in.byte() % paths.size()];
    auto text = sources.texts.find(f.path);
    f.range = range(in, text == sources.texts.end() ? 0 : text->second.text.size());
    f.function = in.text(64);
    f.confidence = in.byte() & 1 ? in.byte() / 255.0 : in.real();
    for (size_t e = 0, n = in.byte() % 4; e < n; ++e) {
      Evidence ev;
      ev.text = in.text(80);
      ev.present = in.byte() & 1;
      ev.weight = in.byte() & 1 ? in.byte() / 100.0 : in.real();
      if (in.byte() & 1) ev.range = range(in, 0);
      ev.related = (in.byte() & 3) == 0;  // another place of the problem (engine.h `Rule::related`)
      f.evidence.push_back(std::move(ev));
    }
    f.fix = in.text(200);
    if (in.byte() & 1) f.kernel = in.byte() & 1 ? "kernels/attention_fwd" : in.text(40);
    f.level = pick(in, {"", "library", "torch-compile", "triton", "cuda"});
    f.measured = in.text(80);
    if (in.byte() & 1) f.context = in.text(80), f.context_kind = pick(in, {"fallback", "test", "reference"});
    f.fingerprint = in.text(24);
    rep.findings.push_back(std::move(f));
  }
  for (size_t i = 0; i < errors; ++i) {
    FileError e;
    e.path = paths[in.byte() % paths.size()];
    e.message = in.text(200);
    e.line = in.byte() & 1 ? in.u32() : 0;
    e.column = in.byte();
    rep.errors.push_back(std::move(e));
  }
  rep.files_analyzed = in.byte();
  // Rules a project's torch pin turned off: the notes every format writes.
  for (size_t i = 0, n = in.byte() % 3; i < n; ++i) {
    Report::TorchOff& off = rep.torch_off[pick(in, {"1.10", "2.0", "1.3.1"})];
    off.files += 1 + in.byte() % 4;
    for (size_t r = 0, m = 1 + in.byte() % 3; r < m; ++r) off.rules.insert(in.byte() & 1 ? rules[in.byte() % rules.size()].id : in.text(16));
  }

  report::Context context;
  // The rules of the findings and two more (every rule's documentation in each SARIF
  // log would make the target ten times slower and test nothing more).
  for (size_t i = 0; i < rules.size(); ++i) {
    bool used = i < 2;
    for (const Finding& f : rep.findings) used = used || f.rule == rules[i].id;
    if (used) context.rules.push_back(rules[i]);
  }
  context.tags = tags;
  context.sources = &sources;
  (void)report::to_text(rep, sources, {});
  (void)report::to_text(rep, sources, {.color = true});
  must_parse(report::to_json(rep, &sources));
  std::istringstream lines(report::to_json_lines(rep, &sources));
  for (std::string line; std::getline(lines, line);) must_parse(line);
  must_parse(report::to_sarif(rep, context));
  (void)report::to_github(rep, &sources);
  (void)report::to_junit(rep, context);
  (void)report::statistics(rep);

  // A baseline of this report accepts every finding of it (keys in valid UTF-8: the
  // JSON file cannot hold other bytes).
  std::string error;
  std::optional<report::Baseline> baseline = report::read_baseline(report::baseline_json(rep), error);
  if (!baseline) std::abort();
  bool exact = true;
  for (const auto& f : rep.findings)
    exact = exact && valid_utf8(f.path) && valid_utf8(f.rule) && valid_utf8(f.function) && valid_utf8(f.fingerprint);
  Report copy = rep;
  size_t dropped = report::apply_baseline(copy, *baseline);
  if (exact && (dropped != rep.findings.size() || !copy.findings.empty())) std::abort();
  // And any text offered as a baseline is read or refused with a reason.
  error.clear();
  if (!report::read_baseline(std::string(in.rest()), error) && error.empty()) std::abort();
  return 0;
}

}  // namespace mlsem::fuzz
