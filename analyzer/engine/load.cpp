// Loading and validating concepts/, patterns/ and rules/. Every problem names its
// file and line; a rule set with any problem is refused as a whole.
#include <algorithm>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <toml++/toml.h>

#include "engine/compiled.h"
#include "engine/engine.h"
#include "engine/fix_template.h"

namespace fs = std::filesystem;

namespace mlsem {
namespace {

std::vector<fs::path> toml_files_under(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec) && it->path().extension() == ".toml") out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Typed access to one TOML file's values, recording errors with their lines.
class Reader {
 public:
  Reader(std::string file, std::vector<FileError>& errors) : file_(std::move(file)), errors_(errors) {}

  const std::string& file() const { return file_; }
  size_t error_count() const { return count_; }

  void error(uint32_t line, const std::string& message) {
    errors_.push_back({file_, message, line, 0});
    ++count_;
  }
  void error(const toml::node& at, const std::string& message) { error(line_of(at), message); }
  static uint32_t line_of(const toml::node& n) { return static_cast<uint32_t>(n.source().begin.line); }

  std::optional<toml::table> parse() {
    try {
      return toml::parse_file(file_);
    } catch (const toml::parse_error& e) {
      error(static_cast<uint32_t>(e.source().begin.line), std::string("TOML syntax: ") + std::string(e.description()));
      return std::nullopt;
    }
  }

  // Unknown keys are errors: a misspelt optional key must not be silently ignored.
  void only_keys(const toml::table& t, std::initializer_list<std::string_view> allowed, std::string_view what) {
    for (auto&& [key, value] : t) {
      if (std::find(allowed.begin(), allowed.end(), key.str()) == allowed.end())
        error(value, "unknown key '" + std::string(key.str()) + "' in " + std::string(what));
    }
  }

  std::string str(const toml::table& t, std::string_view key, bool required, uint32_t table_line) {
    const toml::node* n = t.get(key);
    if (!n) {
      if (required) error(table_line, "missing required key '" + std::string(key) + "'");
      return {};
    }
    if (auto v = n->value<std::string>()) return *v;
    error(*n, "'" + std::string(key) + "' must be a string");
    return {};
  }

  std::vector<std::string> strs(const toml::table& t, std::string_view key, bool required, uint32_t table_line) {
    std::vector<std::string> out;
    const toml::node* n = t.get(key);
    if (!n) {
      if (required) error(table_line, "missing required key '" + std::string(key) + "'");
      return out;
    }
    const toml::array* arr = n->as_array();
    if (!arr) {
      error(*n, "'" + std::string(key) + "' must be an array of strings");
      return out;
    }
    for (const auto& el : *arr) {
      if (auto v = el.value<std::string>()) out.push_back(*v);
      else error(el, "'" + std::string(key) + "' must hold strings only");
    }
    return out;
  }

  std::optional<double> number(const toml::table& t, std::string_view key) {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (auto v = n->value<double>()) return *v;
    error(*n, "'" + std::string(key) + "' must be a number");
    return std::nullopt;
  }

  // The line of a pattern-language error inside a (possibly multi-line) string value.
  uint32_t line_in_string(const toml::node& n, const std::string& value, size_t offset) {
    uint32_t line = line_of(n);
    std::string first = source_line(line);
    // A multi-line string whose delimiter ends its line starts on the next line.
    for (std::string_view delim : {"\"\"\"", "'''"}) {
      size_t d = first.find(delim);
      if (d != std::string::npos && first.find_first_not_of(" \t\r", d + 3) == std::string::npos) ++line;
    }
    return line + static_cast<uint32_t>(std::count(value.begin(), value.begin() + std::min(offset, value.size()), '\n'));
  }

 private:
  std::string file_;
  std::vector<FileError>& errors_;
  size_t count_ = 0;

  std::string source_line(uint32_t n) {
    std::ifstream in(file_);
    std::string line;
    for (uint32_t i = 0; i < n && std::getline(in, line); ++i) {
    }
    return line;
  }
};

const std::regex kKebab("^[a-z0-9]+(-[a-z0-9]+)*$");
const std::regex kRuleId("^[A-Z]{2,4}[0-9]{3}$");

bool one_of(const std::string& v, std::initializer_list<const char*> options) {
  return std::any_of(options.begin(), options.end(), [&](const char* o) { return v == o; });
}

// Reports the first cycle through `edges` (id -> targets), naming where it starts.
template <class GetEdges>
void check_acyclic(const std::vector<Concept>& concepts, GetEdges edges, const char* what,
                   std::vector<FileError>& errors) {
  std::map<std::string, const Concept*> by_id;
  for (const auto& c : concepts) by_id[c.id] = &c;
  std::map<std::string, int> state;  // 0 new, 1 on stack, 2 done
  std::vector<std::string> stack;
  std::function<bool(const Concept&)> visit = [&](const Concept& c) {
    state[c.id] = 1;
    stack.push_back(c.id);
    for (const auto& next : edges(c)) {
      auto it = by_id.find(next);
      if (it == by_id.end()) continue;
      if (state[next] == 1) {
        std::string path;
        for (auto s = std::find(stack.begin(), stack.end(), next); s != stack.end(); ++s) path += *s + " -> ";
        errors.push_back({c.file, std::string("cycle in ") + what + ": " + path + next, c.line, 0});
        return false;
      }
      if (state[next] == 0 && !visit(*it->second)) return false;
    }
    stack.pop_back();
    state[c.id] = 2;
    return true;
  };
  for (const auto& c : concepts)
    if (state[c.id] == 0 && !visit(c)) return;
}

// The curriculum keys of a concept (`mlsem learn`): explanation, checkpoint, minutes,
// stage and lessons, each optional. A lesson names kernels/<name> or samples/<path>;
// it must exist when the data directory has that folder (an install may not ship samples).
void load_curriculum(Reader& r, const toml::table& t, const fs::path& lessons_root, Concept& c) {
  uint32_t line = Reader::line_of(t);
  auto at = [&](std::string_view key) { return t.get(key) ? Reader::line_of(*t.get(key)) : line; };
  c.explanation = r.str(t, "explanation", false, line);
  c.checkpoint = r.str(t, "checkpoint", false, line);
  c.stage = r.str(t, "stage", false, line);
  c.lessons = r.strs(t, "lessons", false, line);
  if (const toml::node* m = t.get("minutes")) {
    auto v = m->value_exact<int64_t>();
    if (!v || *v < 1 || *v > 600) r.error(*m, "'minutes' must be a whole number of minutes from 1 to 600");
    else c.minutes = static_cast<int>(*v);
  }
  if (!c.stage.empty() && !one_of(c.stage, {"beginner", "intermediate", "advanced"}))
    r.error(at("stage"), "stage must be \"beginner\", \"intermediate\" or \"advanced\"");
  for (const auto& lesson : c.lessons) {
    const bool kernel = lesson.rfind("kernels/", 0) == 0, sample = lesson.rfind("samples/", 0) == 0;
    if (!kernel && !sample) {
      r.error(at("lessons"), "lesson '" + lesson + "' must be kernels/<name> or samples/<path>");
      continue;
    }
    std::error_code ec;
    const fs::path top = lessons_root / (kernel ? "kernels" : "samples");
    if (fs::is_directory(top, ec) && !fs::exists(lessons_root / lesson, ec))
      r.error(at("lessons"), "lesson '" + lesson + "' does not exist");
  }
}

void load_concepts(const fs::path& dir, std::vector<Concept>& out, std::vector<FileError>& errors) {
  const fs::path lessons_root = dir.parent_path();
  std::map<std::string, std::pair<std::string, uint32_t>> seen;
  for (const auto& path : toml_files_under(dir)) {
    Reader r(path.string(), errors);
    auto doc = r.parse();
    if (!doc) continue;
    r.only_keys(*doc, {"concept"}, "a concepts file");
    const toml::array* arr = (*doc)["concept"].as_array();
    if (!arr) {
      r.error(1, "a concepts file holds [[concept]] tables");
      continue;
    }
    for (const auto& el : *arr) {
      const toml::table* t = el.as_table();
      if (!t) {
        r.error(el, "each [[concept]] must be a table");
        continue;
      }
      uint32_t line = Reader::line_of(*t);
      r.only_keys(*t, {"id", "name", "parents", "requires", "summary", "kernels", "reading", "explanation",
                       "checkpoint", "minutes", "stage", "lessons"},
                  "[[concept]]");
      Concept c;
      c.id = r.str(*t, "id", true, line);
      c.name = r.str(*t, "name", true, line);
      c.parents = r.strs(*t, "parents", false, line);
      c.requires_ = r.strs(*t, "requires", false, line);
      c.summary = r.str(*t, "summary", true, line);
      c.kernels = r.strs(*t, "kernels", false, line);
      c.reading = r.strs(*t, "reading", false, line);
      c.file = r.file();
      c.line = line;
      load_curriculum(r, *t, lessons_root, c);
      if (c.id.empty()) continue;
      if (!std::regex_match(c.id, kKebab)) r.error(line, "concept id '" + c.id + "' must be kebab-case");
      if (auto [it, fresh] = seen.emplace(c.id, std::make_pair(c.file, line)); !fresh)
        r.error(line, "duplicate concept id '" + c.id + "' (first defined at " + it->second.first + ":" +
                          std::to_string(it->second.second) + ")");
      else out.push_back(std::move(c));
    }
  }
  for (const auto& c : out) {
    for (const auto& p : c.parents)
      if (!seen.count(p)) errors.push_back({c.file, "concept '" + c.id + "': unknown parent '" + p + "'", c.line, 0});
    for (const auto& p : c.requires_)
      if (!seen.count(p)) errors.push_back({c.file, "concept '" + c.id + "': unknown prerequisite '" + p + "'", c.line, 0});
  }
  check_acyclic(out, [](const Concept& c) -> const std::vector<std::string>& { return c.parents; }, "parents", errors);
  check_acyclic(out, [](const Concept& c) -> const std::vector<std::string>& { return c.requires_; }, "requires", errors);
}

std::optional<RegionSpec> region_clause(Reader& r, const toml::table& t, std::string_view key) {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  auto text = n->value<std::string>();
  if (!text) {
    r.error(*n, "'" + std::string(key) + "' must be a string such as \"loop[training]\"");
    return std::nullopt;
  }
  auto parsed = parse_region_spec(*text);
  if (auto* e = std::get_if<ParseError>(&parsed)) {
    r.error(*n, "'" + std::string(key) + "': " + e->message + " at column " + std::to_string(e->offset + 1));
    return std::nullopt;
  }
  return std::get<RegionSpec>(parsed);
}

// Pattern files may declare op classes and the op vocabulary of a language; both are
// gathered from every file before any pattern is parsed.
struct PatternData {
  OpClasses classes;
  std::map<std::string, std::set<std::string>> vocabulary;  // language -> known ops
};

// A parsed patterns file; each file is read and parsed once for both passes.
struct PatternFile {
  std::string path;
  toml::table doc;
};

void load_pattern_declarations(const std::vector<PatternFile>& files, PatternData& data,
                               std::vector<FileError>& errors) {
  for (const auto& [path, doc] : files) {
    Reader r(path, errors);
    if (const toml::table* classes = doc["classes"].as_table()) {
      for (auto&& [key, value] : *classes) {
        std::string name(key.str());
        auto ops = r.strs(*classes, name, true, Reader::line_of(value));
        auto [it, fresh] = data.classes.emplace(name, ops);
        if (!fresh && it->second != ops) r.error(value, "op class '" + name + "' is defined differently elsewhere");
      }
    }
    if (const toml::table* vocab = doc["vocabulary"].as_table()) {
      for (auto&& [key, value] : *vocab) {
        auto ops = r.strs(*vocab, key.str(), true, Reader::line_of(value));
        data.vocabulary[std::string(key.str())].insert(ops.begin(), ops.end());
      }
    }
  }
}

void load_patterns(const fs::path& dir, CompiledPatterns& out, std::vector<FileError>& errors) {
  std::vector<PatternFile> files;
  for (const auto& path : toml_files_under(dir)) {
    Reader r(path.string(), errors);
    if (auto doc = r.parse()) files.push_back({path.string(), std::move(*doc)});
  }
  PatternData data;
  load_pattern_declarations(files, data, errors);
  // Which ops take their operands in any order is data too: the class `commutative`.
  if (auto it = data.classes.find("commutative"); it != data.classes.end())
    out.commutative_ops.insert(it->second.begin(), it->second.end());

  std::map<std::string, std::string> seen;
  for (const auto& [path, doc] : files) {
    Reader r(path, errors);
    r.only_keys(doc, {"classes", "vocabulary", "pattern"}, "a patterns file");
    const toml::node* list = doc.get("pattern");
    if (!list) continue;
    const toml::array* arr = list->as_array();
    if (!arr) {
      r.error(*list, "'pattern' must be [[pattern]] tables");
      continue;
    }
    for (const auto& el : *arr) {
      const toml::table* t = el.as_table();
      if (!t) {
        r.error(el, "each [[pattern]] must be a table");
        continue;
      }
      uint32_t line = Reader::line_of(*t);
      size_t errors_before = r.error_count();
      r.only_keys(*t, {"id", "language", "match", "base", "focus", "distinct", "inside", "not_inside", "evidence",
                       "message", "fix", "rewrite"},
                  "[[pattern]]");
      CompiledPattern p;
      p.id = r.str(*t, "id", true, line);
      p.language = r.str(*t, "language", true, line);
      p.file = r.file();
      p.line = line;
      if (!p.language.empty() && !one_of(p.language, {"python", "cuda"}))
        r.error(line, "language must be \"python\" or \"cuda\"");
      std::string match = r.str(*t, "match", true, line);
      if (!match.empty()) {
        auto parsed = parse_pattern(match, data.classes);
        if (auto* e = std::get_if<ParseError>(&parsed)) {
          r.error(r.line_in_string(*t->get("match"), match, e->offset),
                  "pattern '" + p.id + "': " + e->message + " (at \"" + match.substr(e->offset, 20) + "\")");
        } else {
          p.term = std::move(std::get<PatternTerm>(parsed));
        }
      }
      p.message = r.str(*t, "message", false, line);
      p.fix = r.str(*t, "fix", false, line);
      if (!p.fix.empty()) {
        auto parsed = parse_fix_template(p.fix);
        if (auto* e = std::get_if<ParseError>(&parsed))
          r.error(line, "fix: " + e->message + " at column " + std::to_string(e->offset + 1));
        else
          p.fix_template = std::make_shared<FixTemplate>(std::move(std::get<FixTemplate>(parsed)));
      }
      p.base = r.number(*t, "base").value_or(0.5);
      if (p.base < 0 || p.base > 1) r.error(line, "base must be within [0, 1]");
      if (const toml::node* f = t->get("focus"); f && f->is_string()) p.focus = {*f->value<std::string>()};
      else p.focus = r.strs(*t, "focus", false, line);
      p.inside = region_clause(r, *t, "inside");
      p.not_inside = region_clause(r, *t, "not_inside");

      std::vector<std::string> labels;
      collect_labels(p.term, labels);
      auto known_label = [&](const std::string& l) { return std::find(labels.begin(), labels.end(), l) != labels.end(); };
      for (const auto& f : p.focus)
        if (!known_label(f)) r.error(line, "focus '" + f + "' is not a label in match");
      p.distinct = r.strs(*t, "distinct", false, line);
      std::vector<std::string> names = labels;
      collect_vars(p.term, names);
      for (const auto& v : p.distinct)
        if (std::find(names.begin(), names.end(), v) == names.end())
          r.error(line, "distinct: '" + v + "' is not a variable or label in match (write it without '$' or '@')");
      if (auto vocab = data.vocabulary.find(p.language); vocab != data.vocabulary.end()) {
        std::vector<std::string> ops;
        collect_ops(p.term, ops);
        for (const auto& op : ops)
          if (!vocab->second.count(op))
            r.error(line, "pattern '" + p.id + "': '" + op + "' is not an op of the " + p.language + " IR (docs/IR.md)");
      }
      if (std::string rewrite = r.str(*t, "rewrite", false, line); !rewrite.empty()) {
        auto parsed = parse_fix_template(rewrite);
        if (auto* e = std::get_if<ParseError>(&parsed)) {
          r.error(line, "rewrite: " + e->message + " at column " + std::to_string(e->offset + 1));
        } else {
          auto tmpl = std::make_shared<FixTemplate>(std::move(std::get<FixTemplate>(parsed)));
          std::vector<FixRef> refs;
          collect_fix_refs(*tmpl, refs);
          for (const auto& ref : refs)
            if (ref.label != "function" && !ref.label.starts_with("#") &&
                std::find(names.begin(), names.end(), ref.label) == names.end())
              r.error(line, "rewrite: '{" + ref.text + "}' names '" + ref.label +
                                "', not a label or variable of this pattern ('#op' or 'function')");
          p.rewrite_template = std::move(tmpl);
        }
      }
      if (const toml::node* ev = t->get("evidence")) {
        const toml::array* items = ev->as_array();
        if (!items) r.error(*ev, "'evidence' must be [[pattern.evidence]] tables");
        for (size_t i = 0; items && i < items->size(); ++i) {
          const toml::table* et = (*items)[i].as_table();
          if (!et) {
            r.error((*items)[i], "each evidence item must be a table");
            continue;
          }
          uint32_t eline = Reader::line_of(*et);
          r.only_keys(*et, {"label", "op", "check", "inside", "weight", "present", "absent"}, "[[pattern.evidence]]");
          EvidenceSpec e;
          e.label = r.str(*et, "label", false, eline);
          if (!e.label.empty() && !known_label(e.label))
            r.error(eline, "evidence label '" + e.label + "' is not a label in match");
          e.op = r.str(*et, "op", false, eline);
          if (!e.op.empty() && !e.label.empty()) r.error(eline, "evidence takes a 'label' or an 'op', not both");
          if (const toml::node* check = et->get("check")) {
            auto parsed = parse_predicates(check->value<std::string>().value_or(""));
            if (auto* pe = std::get_if<ParseError>(&parsed))
              r.error(*check, "check: " + pe->message + " at column " + std::to_string(pe->offset + 1));
            else e.check = std::get<std::vector<Predicate>>(parsed);
          }
          e.inside = region_clause(r, *et, "inside");
          auto w = r.number(*et, "weight");
          if (!w) r.error(eline, "evidence needs a numeric 'weight'");
          e.weight = w.value_or(0);
          e.present = r.str(*et, "present", true, eline);
          e.absent = r.str(*et, "absent", false, eline);
          p.evidence.push_back(std::move(e));
        }
      }
      double max_conf = p.base;
      for (const auto& e : p.evidence) max_conf += std::max(0.0, e.weight);
      if (max_conf > 1.0 + 1e-9)
        r.error(line, "pattern '" + p.id + "': base plus positive evidence weights is " + std::to_string(max_conf) +
                          ", above 1: confidence would saturate");
      if (p.id.empty() || r.error_count() != errors_before) continue;
      if (auto [it, fresh] = seen.emplace(p.id, p.file + ":" + std::to_string(line)); !fresh) {
        r.error(line, "duplicate pattern id '" + p.id + "' (first at " + it->second + ")");
        continue;
      }
      out.patterns.push_back(std::move(p));
    }
  }
}

void load_rules(const fs::path& data_dir, const std::vector<Concept>& concepts, const CompiledPatterns& patterns,
                std::vector<Rule>& out, std::vector<FileError>& errors) {
  std::map<std::string, std::string> ids, names;
  const bool have_kernels = fs::is_directory(data_dir / "kernels");
  for (const auto& path : toml_files_under(data_dir / "rules")) {
    Reader r(path.string(), errors);
    auto doc = r.parse();
    if (!doc) continue;
    const toml::table& t = *doc;
    r.only_keys(t, {"id", "name", "status", "language", "concept", "severity", "patterns", "message", "fix", "kernel",
                    "supersedes", "per_function", "related", "demote_in", "requires_torch", "configured_by", "level",
                    "docs"},
                "a rule file");
    size_t errors_before = r.error_count();
    Rule rule;
    rule.file = r.file();
    rule.line = 1;
    rule.id = r.str(t, "id", true, 1);
    rule.name = r.str(t, "name", true, 1);
    rule.status = r.str(t, "status", false, 1);
    if (rule.status.empty()) rule.status = "stable";
    rule.language = r.str(t, "language", true, 1);
    rule.concept_id = r.str(t, "concept", true, 1);
    rule.severity = r.str(t, "severity", true, 1);
    rule.patterns = r.strs(t, "patterns", true, 1);
    rule.message = r.str(t, "message", true, 1);
    rule.fix = r.str(t, "fix", true, 1);
    if (std::string k = r.str(t, "kernel", false, 1); !k.empty()) rule.kernel = k;
    rule.supersedes = r.strs(t, "supersedes", false, 1);
    if (const toml::node* pf = t.get("per_function")) {
      if (auto b = pf->value<bool>()) rule.per_function = *b;
      else r.error(Reader::line_of(*pf), "'per_function' must be true or false");
    }
    rule.related = r.str(t, "related", false, 1);
    if (rule.per_function && !rule.related.empty())
      r.error(Reader::line_of(*t.get("related")), "'related' and 'per_function' are two ways of merging a function's findings: use one");
    rule.level = r.str(t, "level", false, 1);
    auto at = [&](std::string_view key) { return t.get(key) ? Reader::line_of(*t.get(key)) : 1u; };
    if (t.get("demote_in")) {
      rule.demote_in = r.strs(t, "demote_in", false, 1);
      for (const auto& kind : rule.demote_in)
        if (std::none_of(std::begin(kContextKinds), std::end(kContextKinds), [&](const char* k) { return kind == k; }))
          r.error(at("demote_in"), "demote_in: unknown context '" + kind +
                                       "' (test, reference, parity, fallback, returns-weights, variant)");
    }
    rule.requires_torch = r.str(t, "requires_torch", false, 1);
    rule.configured_by = r.strs(t, "configured_by", false, 1);
    for (const auto& s : rule.configured_by)
      if (s.empty()) r.error(at("configured_by"), "configured_by: an empty setting would match every file");
    if (!rule.requires_torch.empty() && !valid_version(rule.requires_torch))
      r.error(at("requires_torch"), "requires_torch must be a version such as \"2.4\"");
    if (!rule.fix.empty()) {
      auto parsed = parse_fix_template(rule.fix);
      if (auto* e = std::get_if<ParseError>(&parsed)) {
        r.error(at("fix"), "fix: " + e->message + " at column " + std::to_string(e->offset + 1));
      } else {
        auto tmpl = std::make_shared<FixTemplate>(std::move(std::get<FixTemplate>(parsed)));
        // Every label a fix names must be a label of one of the rule's patterns.
        std::vector<std::string> labels;
        for (const auto& pid : rule.patterns)
          for (const auto& p : patterns.patterns)
            if (p.id == pid) {
              collect_labels(p.term, labels);
              collect_vars(p.term, labels);
            }
        std::vector<FixRef> refs;
        collect_fix_refs(*tmpl, refs);
        for (const auto& ref : refs)
          if (ref.label != "function" && !ref.label.starts_with("#") &&
              std::find(labels.begin(), labels.end(), ref.label) == labels.end())
            r.error(at("fix"), "fix: '{" + ref.text + "}' names '" + ref.label +
                                   "', not a label or variable of the rule's patterns ('#op' or 'function')");
        rule.fix_template = std::move(tmpl);
      }
    }
    if (!rule.id.empty() && !std::regex_match(rule.id, kRuleId))
      r.error(at("id"), "rule id '" + rule.id + "' must be letters then three digits, like ATT001");
    if (!rule.name.empty() && !std::regex_match(rule.name, kKebab))
      r.error(at("name"), "rule name '" + rule.name + "' must be kebab-case");
    if (!one_of(rule.status, {"stable", "preview"})) r.error(at("status"), "status must be \"stable\" or \"preview\"");
    if (!rule.language.empty() && !one_of(rule.language, {"python", "cuda"}))
      r.error(at("language"), "language must be \"python\" or \"cuda\"");
    if (!rule.level.empty() && !one_of(rule.level, {"library", "torch-compile", "triton", "cuda"}))
      r.error(at("level"), "level must be \"library\", \"torch-compile\", \"triton\" or \"cuda\"");
    if (!rule.severity.empty() && !one_of(rule.severity, {"error", "warning", "info"}))
      r.error(at("severity"), "severity must be \"error\", \"warning\" or \"info\"");
    if (!rule.concept_id.empty() &&
        std::none_of(concepts.begin(), concepts.end(), [&](const Concept& c) { return c.id == rule.concept_id; }))
      r.error(at("concept"), "unknown concept '" + rule.concept_id + "' (concepts/)");
    for (const auto& pid : rule.patterns) {
      auto it = std::find_if(patterns.patterns.begin(), patterns.patterns.end(),
                             [&](const CompiledPattern& p) { return p.id == pid; });
      if (it == patterns.patterns.end()) r.error(at("patterns"), "unknown pattern '" + pid + "' (patterns/)");
      else if (it->language != rule.language)
        r.error(at("patterns"), "pattern '" + pid + "' is for " + it->language + ", the rule for " + rule.language);
    }
    if (rule.kernel && have_kernels && !fs::is_directory(data_dir / *rule.kernel))
      r.error(at("kernel"), "kernel '" + *rule.kernel + "' does not exist");
    if (const toml::node* docs = t.get("docs")) {
      if (const toml::table* d = docs->as_table()) {
        uint32_t dl = Reader::line_of(*d);
        r.only_keys(*d, {"summary", "why", "example", "fixed_example"}, "[docs]");
        rule.docs.summary = r.str(*d, "summary", true, dl);
        rule.docs.why = r.str(*d, "why", true, dl);
        rule.docs.example = r.str(*d, "example", false, dl);
        rule.docs.fixed_example = r.str(*d, "fixed_example", false, dl);
      } else {
        r.error(*docs, "'docs' must be a table");
      }
    } else {
      r.error(1, "missing [docs] table (summary, why, example, fixed_example)");
    }
    if (r.error_count() != errors_before) continue;
    if (auto [it, fresh] = ids.emplace(rule.id, rule.file); !fresh) {
      r.error(at("id"), "duplicate rule id '" + rule.id + "' (also in " + it->second + ")");
      continue;
    }
    if (auto [it, fresh] = names.emplace(rule.name, rule.file); !fresh) {
      r.error(at("name"), "duplicate rule name '" + rule.name + "' (also in " + it->second + ")");
      continue;
    }
    out.push_back(std::move(rule));
  }
  for (const auto& rule : out)
    for (const auto& s : rule.supersedes)
      if (!ids.count(s)) errors.push_back({rule.file, "supersedes unknown rule '" + s + "'", 1, 0});
  std::sort(out.begin(), out.end(), [](const Rule& a, const Rule& b) { return a.id < b.id; });
}

void index_patterns(CompiledPatterns& cp, const std::vector<Rule>& rules, std::vector<FileError>& errors) {
  cp.rules_of_pattern.assign(cp.patterns.size(), {});
  for (size_t ri = 0; ri < rules.size(); ++ri)
    for (const auto& pid : rules[ri].patterns)
      for (size_t pi = 0; pi < cp.patterns.size(); ++pi)
        if (cp.patterns[pi].id == pid) cp.rules_of_pattern[pi].push_back(ri);
  for (size_t pi = 0; pi < cp.patterns.size(); ++pi) {
    const CompiledPattern& p = cp.patterns[pi];
    // A pattern no rule names is almost always a rule that forgot to list it.
    if (cp.rules_of_pattern[pi].empty()) {
      errors.push_back({p.file, "pattern '" + p.id + "' is not used by any rule", p.line, 0});
      continue;
    }
    if (auto ops = root_ops(p.term)) {
      std::sort(ops->begin(), ops->end());
      ops->erase(std::unique(ops->begin(), ops->end()), ops->end());
      for (const auto& op : *ops) cp.by_root_op[op].push_back(pi);
    } else {
      cp.any_root.push_back(pi);
    }
  }
}

}  // namespace

// Defined here so engine.cpp need not see the loader's helpers.
bool load_engine_data(const fs::path& data_dir, std::vector<Rule>& rules, std::vector<Concept>& concepts,
                      CompiledPatterns& patterns, std::vector<FileError>& errors) {
  size_t before = errors.size();
  for (const char* sub : {"concepts", "patterns", "rules"})
    if (!fs::is_directory(data_dir / sub))
      errors.push_back({(data_dir / sub).string(), "data directory not found (set MLSEM_DATA or --data)", 0, 0});
  if (errors.size() != before) return false;
  load_concepts(data_dir / "concepts", concepts, errors);
  load_patterns(data_dir / "patterns", patterns, errors);
  load_rules(data_dir, concepts, patterns, rules, errors);
  if (errors.size() == before) index_patterns(patterns, rules, errors);
  return errors.size() == before;
}

}  // namespace mlsem
