// Open documents: text synchronization, the debounced analysis worker, diagnostics
// (pushed or pulled), and the requests answered from a document's fresh analysis.
#include <time.h>
#include <tree_sitter/api.h>

#include <algorithm>

#include "driver/driver.h"
#include "driver/torch_version.h"
#include "lsp/findings.h"
#include "lsp/server.h"
#include "report/report.h"

namespace mlsem::lsp {
namespace {

// CPU time of the calling thread: what an analysis costs whatever else the machine runs.
double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

bool ends_with_any(const std::string& s, std::initializer_list<const char*> suffixes) {
  return std::any_of(suffixes.begin(), suffixes.end(), [&](const char* x) { return s.ends_with(x); });
}

// The tree-sitter point of a byte offset: rows split at '\n' only, columns in bytes
// (a '\r' before the '\n' is a column, as tree-sitter counts it).
TSPoint point_of(const Text& text, size_t offset) {
  const std::string& s = text.str();
  offset = std::min(offset, s.size());
  uint32_t row = static_cast<uint32_t>(std::count(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
  size_t line_start = row == 0 ? 0 : s.rfind('\n', offset - 1) + 1;
  return {row, static_cast<uint32_t>(offset - line_start)};
}

}  // namespace

extern "C" const TSLanguage* tree_sitter_python();

void TreeDeleter::operator()(TSTree* t) const { ts_tree_delete(t); }
void ParserDeleter::operator()(TSParser* p) const { ts_parser_delete(p); }

// A change within debounce_ms of the previous one (typing) waits debounce_ms after
// the last change; an isolated change, or an open, is analyzed at once.
void Server::schedule(Document& doc, bool burst) {
  Clock::time_point now = Clock::now();
  bool typing = burst && now - doc.last_change < std::chrono::milliseconds(options_.debounce_ms);
  doc.due = typing ? now + std::chrono::milliseconds(options_.debounce_ms) : now;
  doc.last_change = now;
  doc.dirty = true;
  ++doc.edits;
  ++scheduled_;
}

void Server::did_open(const json& params) {
  const json& td = params.at("textDocument");
  Document doc;
  doc.uri = td.at("uri").get<std::string>();
  doc.version = td.value("version", 0);
  doc.text = Text(td.at("text").get<std::string>());
  std::string language = td.value("languageId", "");
  std::string path = path_from_uri(doc.uri);
  if (path.empty()) path = doc.uri;
  if (!ends_with_any(path, {".py", ".pyi", ".cu", ".cuh"})) {
    if (language == "python") path += ".py";
    else if (language == "cuda" || language == "cuda-cpp") path += ".cu";
    else doc.analyzable = false;
  }
  doc.cuda = ends_with_any(path, {".cu", ".cuh"});
  doc.path = path;
  std::lock_guard lock(mutex_);
  Document& slot = docs_[doc.uri] = std::move(doc);
  schedule(slot, false);
  wake_.notify_all();
}

void Server::did_change(const json& params) {
  const json& td = params.at("textDocument");
  std::string uri = td.at("uri").get<std::string>();
  std::lock_guard lock(mutex_);
  auto it = docs_.find(uri);
  if (it == docs_.end()) return;  // a change to a document that is not open
  Document& doc = it->second;
  for (const json& change : params.at("contentChanges")) {
    if (change.contains("range")) {
      const json& r = change["range"];
      LspPosition a{r.at("start").at("line").get<uint32_t>(), r.at("start").at("character").get<uint32_t>()};
      LspPosition b{r.at("end").at("line").get<uint32_t>(), r.at("end").at("character").get<uint32_t>()};
      size_t begin = doc.text.offset(a, encoding_), end = doc.text.offset(b, encoding_);
      if (end < begin) std::swap(begin, end);
      std::string replacement = change.at("text").get<std::string>();
      TSInputEdit edit{};
      if (doc.tree) {
        edit.start_byte = static_cast<uint32_t>(begin);
        edit.old_end_byte = static_cast<uint32_t>(end);
        edit.start_point = point_of(doc.text, begin);
        edit.old_end_point = point_of(doc.text, end);
      }
      doc.text.replace(begin, end, replacement);
      if (doc.tree) {
        size_t new_end = begin + replacement.size();
        edit.new_end_byte = static_cast<uint32_t>(new_end);
        edit.new_end_point = point_of(doc.text, new_end);
        if (doc.text.str().size() > UINT32_MAX) doc.tree.reset();
        else ts_tree_edit(doc.tree.get(), &edit);
      }
    } else {
      doc.text = Text(change.at("text").get<std::string>());
      doc.tree.reset();  // nothing of the old tree can be reused
    }
  }
  if (td.contains("version") && td["version"].is_number_integer()) doc.version = td["version"];
  schedule(doc, true);
  wake_.notify_all();
}

void Server::did_close(const json& params) {
  std::string uri = params.at("textDocument").at("uri").get<std::string>();
  std::vector<json> out;
  {
    std::lock_guard lock(mutex_);
    auto it = docs_.find(uri);
    if (it == docs_.end()) return;
    // Requests waiting for this document are answered with what a closed document has.
    for (auto p = pending_.begin(); p != pending_.end();) {
      if (p->uri != uri) {
        ++p;
        continue;
      }
      json empty = p->method == "textDocument/codeAction" ? json::array()
                   : p->method == "textDocument/diagnostic"
                       ? json{{"kind", "full"}, {"items", json::array()}}
                       : json(nullptr);
      out.push_back({{"jsonrpc", "2.0"}, {"id", p->id}, {"result", empty}});
      p = pending_.erase(p);
    }
    docs_.erase(it);
    if (!pull_)
      out.push_back({{"jsonrpc", "2.0"},
                     {"method", "textDocument/publishDiagnostics"},
                     {"params", {{"uri", uri}, {"diagnostics", json::array()}}}});
    std::vector<json> more = resolve_pending();  // a workspace request may have waited for it
    out.insert(out.end(), more.begin(), more.end());
  }
  send_all(out);
}

void Server::did_change_watched_files(const json& params) {
  for (const json& change : params.at("changes")) {
    std::string path = path_from_uri(change.at("uri").get<std::string>());
    if (is_config_file(path) || driver::reads_torch_pin(path)) return project_file_changed(path);
  }
}

// The configuration changed: every document is analyzed again under the new rules
// and its diagnostics re-published (push) or the client asked to pull again.
void Server::reload_config() {
  std::vector<json> problems;
  bool refresh = false;
  {
    std::lock_guard lock(mutex_);
    resolver_ = new_resolver(engine_);
    config_errors_shown_ = 0;
    for (auto& [uri, doc] : docs_) {
      std::vector<json> more = prepare_settings(doc.path);  // a bad file is shown now
      problems.insert(problems.end(), more.begin(), more.end());
      schedule(doc, false);
    }
    refresh = pull_ && refresh_support_;
    wake_.notify_all();
  }
  send_all(problems);
  if (refresh) request("workspace/diagnostic/refresh", nullptr);
}

std::vector<json> Server::prepare_settings(const std::string& path) {
  if (!path.empty()) resolver_->prepare({path});
  std::vector<json> out;
  const std::vector<FileError>& errors = resolver_->errors();
  for (; config_errors_shown_ < errors.size(); ++config_errors_shown_) {
    const FileError& e = errors[config_errors_shown_];
    std::string message = "mlsem: " + e.path + (e.line ? ":" + std::to_string(e.line) : "") + ": " + e.message;
    out.push_back({{"jsonrpc", "2.0"}, {"method", "window/showMessage"}, {"params", {{"type", 2}, {"message", message}}}});
    out.push_back({{"jsonrpc", "2.0"}, {"method", "window/logMessage"}, {"params", {{"type", 2}, {"message", message}}}});
  }
  return out;
}

std::unique_ptr<config::Resolver> new_resolver(const Engine& engine) {
  auto resolver = std::make_unique<config::Resolver>(engine, config::CommandLine{});
  std::vector<FileError> errors;  // none: no command-line selectors, no --config
  resolver->init(errors);         // computes the defaults
  return resolver;
}

bool is_config_file(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  return name == "mlsem.toml" || name == "pyproject.toml";
}

void Server::project_file_changed(const std::string& path) {
  bool pins = driver::reads_torch_pin(path);
  if (pins) forget_torch_pins();
  if (pins || is_config_file(path)) reload_config();
}

json Server::publish_params(const Document& doc) const {
  return {{"uri", doc.uri}, {"version", doc.version}, {"diagnostics", doc.diagnostics}};
}

void Server::worker_loop(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  while (!stop.stop_requested()) {
    // The dirty document due first.
    Document* next = nullptr;
    for (auto& [uri, doc] : docs_)
      if (doc.dirty && (!next || doc.due < next->due)) next = &doc;
    if (!next) {
      wake_.wait(lock, stop, [&] {
        return std::any_of(docs_.begin(), docs_.end(), [](const auto& d) { return d.second.dirty; });
      });
      continue;
    }
    if (next->due > Clock::now()) {  // until it is due, or another change comes
      // A copy: wait_until reads the deadline again on every wake-up, with the lock
      // released in between, and a didClose may free the document meanwhile.
      Clock::time_point due = next->due;
      uint64_t seen = scheduled_;
      wake_.wait_until(lock, stop, due, [&] { return scheduled_ != seen; });
      continue;
    }
    std::string uri = next->uri;
    uint64_t edits = next->edits;
    Text text = next->text;
    SourceFile file{next->path, text.str()};
    bool analyzable = next->analyzable;
    // A Python document is reparsed from its previous tree, edited since (a copy: the
    // reader thread may edit the document's own tree meanwhile).
    bool python = analyzable && !next->cuda && !next->path.ends_with(".ipynb") && text.str().size() <= UINT32_MAX;
    TSTree* old_tree = python && next->tree ? ts_tree_copy(next->tree.get()) : nullptr;
    Encoding encoding = encoding_;
    std::string docs_base = options_.docs_base;
    bool trace = trace_;
    std::vector<json> config_problems = prepare_settings(next->path);
    const config::FileSettings& settings = resolver_->settings_for(next->path);
    DriverOptions options;
    options.jobs = 1;
    options.min_confidence = settings.min_confidence;
    options.only_rules = settings.rules;
    options.severity = settings.severity;
    options.torch_version = settings.torch_version;
    options.catalog = [catalog = catalog_] { return catalog; };
    options.cuda = options_.cuda;
    lock.unlock();

    Clock::time_point t0 = Clock::now();
    double cpu0 = thread_cpu_ms();
    TreePtr tree;
    if (python) {
      if (!parser_) {
        parser_.reset(ts_parser_new());
        if (!ts_parser_set_language(parser_.get(), tree_sitter_python())) parser_.reset();
      }
      if (parser_)
        tree.reset(ts_parser_parse_string(parser_.get(), old_tree, file.text.data(), static_cast<uint32_t>(file.text.size())));
      options.python_tree = tree.get();
    }
    bool incremental = old_tree && tree;
    if (old_tree) ts_tree_delete(old_tree);
    Clock::time_point parsed = Clock::now();
    Report report;
    if (analyzable) report = analyze_source(file, engine_, options);
    Clock::time_point t1 = Clock::now();
    double cpu = thread_cpu_ms() - cpu0;
    json diagnostics = json::array();
    for (const Finding& f : report.findings) diagnostics.push_back(to_diagnostic(f, engine_, text, encoding, uri, docs_base));
    Clock::time_point t2 = Clock::now();
    std::vector<json> out = std::move(config_problems);
    if (trace) {
      auto ms = [](Clock::duration d) { return std::to_string(std::chrono::duration<double, std::milli>(d).count()); };
      out.push_back({{"jsonrpc", "2.0"},
                     {"method", "$/logTrace"},
                     {"params", {{"message", "mlsem: analyzed " + uri + " (" + std::to_string(report.findings.size()) +
                                                 " findings): analysis " + ms(t1 - t0) + " ms (cpu " + std::to_string(cpu) + " ms), diagnostics " +
                                                 ms(t2 - t1) + " ms; parse " + ms(parsed - t0) + " ms (" +
                                                 (incremental ? "incremental" : "full") + ")"}}}});
    }
    for (const FileError& e : report.errors)  // syntax errors are the Python server's to show
      if (e.line == 0)
        out.push_back({{"jsonrpc", "2.0"},
                       {"method", "window/logMessage"},
                       {"params", {{"type", 2}, {"message", "mlsem: " + e.path + ": " + e.message}}}});

    lock.lock();
    auto it = docs_.find(uri);
    if (it == docs_.end() || it->second.edits != edits || encoding != encoding_) {  // stale: analyzed again
      lock.unlock();
      send_all(out);  // configuration problems and traces still go out
      lock.lock();
      continue;
    }
    Document& doc = it->second;
    doc.tree = std::move(tree);  // the parse of exactly this text: the next edits apply to it
    doc.dirty = false;
    doc.analyzed = edits;
    doc.findings = std::move(report.findings);
    doc.rewrites.reset();  // computed when a code action asks
    if (doc.result_id.empty() || diagnostics != doc.diagnostics) doc.result_id = std::to_string(++generation_);
    doc.diagnostics = std::move(diagnostics);
    std::string notes;
    for (const report::Note& note : report::notes(report)) notes += "mlsem: " + doc.path + ": note: " + note.message + "\n";
    if (notes != doc.notes && !notes.empty())
      out.push_back({{"jsonrpc", "2.0"}, {"method", "window/logMessage"}, {"params", {{"type", 3}, {"message", notes.substr(0, notes.size() - 1)}}}});
    doc.notes = std::move(notes);
    if (!pull_) out.push_back({{"jsonrpc", "2.0"}, {"method", "textDocument/publishDiagnostics"}, {"params", publish_params(doc)}});
    std::vector<json> answers = resolve_pending();
    out.insert(out.end(), answers.begin(), answers.end());
    lock.unlock();
    send_all(out);
    lock.lock();
  }
}

void Server::document_request(const json& id, const std::string& method, const json& params, const std::string& uri) {
  std::vector<json> out;
  {
    std::lock_guard lock(mutex_);
    pending_.push_back({id, method, params, uri});
    out = resolve_pending();
  }
  send_all(out);
}

void Server::cancel(const json& id) {
  bool found = false;
  {
    std::lock_guard lock(mutex_);
    auto it = std::find_if(pending_.begin(), pending_.end(), [&](const Pending& p) { return p.id == id; });
    if (it != pending_.end()) {
      pending_.erase(it);
      found = true;
    }
  }
  // A request already answered is not answered again.
  if (found) send_error(id, kRequestCancelled, "request cancelled");
}

std::vector<json> Server::resolve_pending() {
  std::vector<json> out;
  bool all_fresh = std::all_of(docs_.begin(), docs_.end(), [](const auto& d) { return d.second.fresh(); });
  for (auto p = pending_.begin(); p != pending_.end();) {
    bool ready = p->uri.empty() ? all_fresh : !docs_.contains(p->uri) || docs_.at(p->uri).fresh();
    if (!ready) {
      ++p;
      continue;
    }
    try {
      out.push_back({{"jsonrpc", "2.0"}, {"id", p->id}, {"result", answer(*p)}});
    } catch (const json::exception& e) {
      out.push_back({{"jsonrpc", "2.0"},
                     {"id", p->id},
                     {"error", {{"code", kInvalidParams}, {"message", "invalid params for " + p->method + ": " + e.what()}}}});
    }
    p = pending_.erase(p);
  }
  return out;
}

json Server::answer(const Pending& p) {
  if (p.method == "workspace/diagnostic") return workspace_diagnostics(p.params);
  auto it = docs_.find(p.uri);
  if (p.method == "textDocument/diagnostic") {
    if (it == docs_.end()) return {{"kind", "full"}, {"items", json::array()}};
    return document_diagnostic_report(it->second, p.params.value("previousResultId", ""));
  }
  if (p.method == "textDocument/hover") return it == docs_.end() ? json(nullptr) : hover(it->second, p.params);
  // A code action's edits are computed on the document as analyzed: fresh, as answer() requires.
  return it == docs_.end() ? json::array() : code_actions(it->second, p.params);
}

json Server::document_diagnostic_report(const Document& doc, const std::string& previous) {
  if (!previous.empty() && previous == doc.result_id) return {{"kind", "unchanged"}, {"resultId", doc.result_id}};
  return {{"kind", "full"}, {"resultId", doc.result_id}, {"items", doc.diagnostics}};
}

json Server::workspace_diagnostics(const json& params) {
  std::map<std::string, std::string> previous;
  if (params.contains("previousResultIds"))
    for (const json& p : params["previousResultIds"]) previous[p.at("uri").get<std::string>()] = p.at("value").get<std::string>();
  json items = json::array();
  for (const auto& [uri, doc] : docs_) {
    json report = document_diagnostic_report(doc, previous.contains(uri) ? previous[uri] : "");
    report["uri"] = uri;
    report["version"] = doc.version;
    items.push_back(std::move(report));
  }
  return {{"items", items}};
}

json Server::hover(const Document& doc, const json& params) {
  const json& pos = params.at("position");
  size_t at = doc.text.offset({pos.at("line").get<uint32_t>(), pos.at("character").get<uint32_t>()}, encoding_);
  std::string markdown;
  std::optional<LspRange> range;
  for (const Finding& f : doc.findings) {
    if (!f.range.valid()) continue;
    size_t b = doc.text.offset(f.range.begin), e = doc.text.offset(f.range.end);
    if (at < b || at > e) continue;
    if (!markdown.empty()) markdown += "\n---\n\n";
    markdown += hover_markdown(f, engine_, options_.docs_base);
    if (!range) range = doc.text.range(f.range, encoding_);
  }
  if (markdown.empty()) return nullptr;
  return {{"contents", {{"kind", "markdown"}, {"value", markdown}}}, {"range", to_json(*range)}};
}

json Server::code_actions(Document& doc, const json& params) {
  const json& r = params.at("range");
  size_t b = doc.text.offset({r.at("start").at("line").get<uint32_t>(), r.at("start").at("character").get<uint32_t>()}, encoding_);
  size_t e = doc.text.offset({r.at("end").at("line").get<uint32_t>(), r.at("end").at("character").get<uint32_t>()}, encoding_);
  if (e < b) std::swap(b, e);
  std::vector<std::string> only;
  if (params.contains("context") && params["context"].contains("only"))
    for (const json& k : params["context"]["only"]) only.push_back(k.get<std::string>());
  auto wanted = [&](const std::string& kind) {
    if (only.empty()) return true;
    return std::any_of(only.begin(), only.end(), [&](const std::string& o) { return kind == o || kind.starts_with(o + "."); });
  };
  auto edit_of = [&](std::vector<json> edits) { return json{{"changes", {{doc.uri, edits}}}}; };

  // Safe rewrites need the parse tree: computed once per analysis, on the first request.
  if (!doc.rewrites) doc.rewrites = safe_rewrites(doc.findings, doc.text, doc.cuda);
  json actions = json::array();
  std::vector<Edit> all_rewrites;
  for (size_t i = 0; i < doc.findings.size(); ++i) {
    const Finding& f = doc.findings[i];
    const std::optional<Edit>& rewrite = (*doc.rewrites)[i];
    if (rewrite) all_rewrites.push_back(*rewrite);
    size_t fb = doc.text.offset(f.range.begin), fe = doc.text.offset(f.range.end);
    if (!f.range.valid() || fe < b || fb > e || !wanted("quickfix")) continue;
    const json& diagnostic = doc.diagnostics.at(i);
    if (rewrite)
      actions.push_back({{"title", rewrite->title},
                         {"kind", "quickfix"},
                         {"isPreferred", true},
                         {"diagnostics", {diagnostic}},
                         {"edit", edit_of({text_edit(*rewrite, doc.text, encoding_)})}});
    if (auto ignore = suppression_edit(f, doc.text, doc.cuda))
      actions.push_back({{"title", ignore->title},
                         {"kind", "quickfix"},
                         {"diagnostics", {diagnostic}},
                         {"edit", edit_of({text_edit(*ignore, doc.text, encoding_)})}});
  }
  // Every safe rewrite of the file at once; an edit overlapping an earlier one is left
  // for the next round (a WorkspaceEdit's edits must not overlap).
  std::sort(all_rewrites.begin(), all_rewrites.end(), [](const Edit& x, const Edit& y) { return x.begin < y.begin; });
  std::vector<json> fix_all;
  size_t covered = 0;
  for (const Edit& edit : all_rewrites) {
    if (!fix_all.empty() && edit.begin < covered) continue;
    fix_all.push_back(text_edit(edit, doc.text, encoding_));
    covered = edit.end;
  }
  if (!fix_all.empty() && wanted("source.fixAll.mlsem"))
    actions.push_back({{"title", "mlsem: apply all safe rewrites"}, {"kind", "source.fixAll.mlsem"}, {"edit", edit_of(fix_all)}});
  return actions;
}

}  // namespace mlsem::lsp
