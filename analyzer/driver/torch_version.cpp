#include "driver/torch_version.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <vector>

#include "engine/engine.h"

namespace fs = std::filesystem;

namespace mlsem::driver {
namespace {

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'; }

// "2.1.0+cu118" -> "2.1"; "" when it does not start with a number.
std::string major_minor(std::string_view v) {
  size_t i = 0;
  std::string out;
  int dots = 0;
  while (i < v.size() && (std::isdigit(static_cast<unsigned char>(v[i])) || v[i] == '.')) {
    if (v[i] == '.' && ++dots == 2) break;
    out += v[i++];
  }
  while (!out.empty() && out.back() == '.') out.pop_back();
  if (!out.empty() && out.find('.') == std::string::npos) out += ".0";
  return out;
}

std::string read_small(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec) || fs::file_size(p, ec) > (1u << 20)) return {};
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The lower bounds in a specifier list: ">=2.0,<2.2" gives 2.0, "==1.8.1+cu111" 1.8,
// "=1.12" (conda) 1.12; with `bare`, versions without an operator too ("1.13.1, 2.0.0").
void lower_bounds(std::string_view s, bool bare, std::vector<std::string>& out) {
  size_t i = 0;
  auto skip_quotes = [&] {
    while (i < s.size() && (s[i] == ' ' || s[i] == '"' || s[i] == '\'')) ++i;
  };
  for (;;) {
    skip_quotes();
    std::string_view op;
    for (std::string_view o : {"===", "==", ">=", "~=", "<=", "!=", "=", ">", "<"})
      if (s.substr(i).starts_with(o)) {
        op = o;
        break;
      }
    if (op.empty() && !bare) return;
    i += op.size();
    while (i < s.size() && s[i] == ' ') ++i;
    if (i < s.size() && s[i] == 'v') ++i;
    bool upper = op.starts_with('<') || op == "!=";
    if (!upper && i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) out.push_back(major_minor(s.substr(i)));
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '.' || s[i] == '+' || s[i] == '*')) ++i;
    skip_quotes();
    if (i >= s.size() || s[i] != ',') return;
    ++i;
  }
}

std::string_view trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string_view::npos ? std::string_view() : s.substr(b, e - b + 1);
}

}  // namespace

std::optional<std::string> torch_pin_in(std::string_view text) {
  // Every requirement on torch counts: one line per platform or Python version
  // (`torch>=2.6; python_version >= "3.13"`, `torch>=2.2.2; sys_platform == 'linux'`) means
  // the project supports the oldest of them.
  std::vector<std::string> found;
  for (size_t at = text.find("torch"); at != std::string_view::npos; at = text.find("torch", at + 5)) {
    // The whole package name must be `torch` (not torchvision, pytorch-lightning).
    if (at > 0 && name_char(text[at - 1])) continue;
    size_t i = at + 5;
    if (i < text.size() && name_char(text[i])) continue;
    auto skip_space = [&] {
      while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    };
    skip_space();
    if (i < text.size() && text[i] == '[') {  // extras: torch[opt-einsum]
      size_t close = text.find(']', i);
      if (close == std::string_view::npos) continue;
      i = close + 1;
      skip_space();
    }
    // poetry: torch = "^2.1" / torch = {version = ">=2.0", ...}
    bool poetry = false;
    if (i < text.size() && text[i] == '=' && !(i + 1 < text.size() && text[i + 1] == '=')) {
      poetry = true;
      ++i;
      skip_space();
      if (i < text.size() && text[i] == '{') {
        size_t v = text.find("version", i);
        size_t close = text.find('}', i);
        if (v == std::string_view::npos || v > close) continue;
        i = text.find_first_of("\"'", v);
        if (i == std::string_view::npos) continue;
      }
      if (i < text.size() && (text[i] == '"' || text[i] == '\'')) ++i;
      skip_space();
    }
    std::string_view rest = text.substr(i);
    for (std::string_view op : {"===", "==", ">=", "~=", "^", "~", ">"}) {
      if (!rest.starts_with(op)) continue;
      i += op.size();
      skip_space();
      if (i < text.size() && text[i] == 'v') ++i;
      std::string v = major_minor(text.substr(i));
      if (!v.empty()) found.push_back(v);
      break;
    }
    if (poetry && !rest.empty() && std::isdigit(static_cast<unsigned char>(rest[0]))) {
      std::string v = major_minor(rest);
      if (!v.empty()) found.push_back(v);
    }
  }
  if (found.empty()) return std::nullopt;
  return *std::min_element(found.begin(), found.end(), version_less);
}

std::optional<std::string> conda_torch_pin_in(std::string_view text) {
  for (size_t at = text.find("pytorch"); at != std::string_view::npos; at = text.find("pytorch", at + 7)) {
    // The package `pytorch`, or `channel::pytorch`; not pytorch-cuda, pytorch-lightning.
    if (at > 0 && name_char(text[at - 1])) continue;
    size_t i = at + 7;
    if (i < text.size() && name_char(text[i])) continue;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    // `pytorch=1.12.1` (a version prefix), `pytorch==2.0`, `pytorch>=1.13`, `pytorch 2.1.*`.
    for (std::string_view op : {"==", ">=", "~=", "=", ""}) {
      if (!text.substr(i).starts_with(op)) continue;
      size_t v = i + op.size();
      while (v < text.size() && text[v] == ' ') ++v;
      std::string version = major_minor(text.substr(v));
      if (!version.empty()) return version;
      break;
    }
  }
  return std::nullopt;
}

std::optional<std::string> ci_torch_pin_in(std::string_view raw) {
  std::string text;  // lowercased, without comments
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '#' && (i == 0 || std::isspace(static_cast<unsigned char>(raw[i - 1])))) i = std::min(raw.find('\n', i), raw.size());
    if (i < raw.size()) text += static_cast<char>(std::tolower(static_cast<unsigned char>(raw[i])));
  }
  std::vector<std::string> found;
  for (size_t at = text.find("torch"); at != std::string::npos; at = text.find("torch", at + 5)) {
    // `torch` or `pytorch`, as a package (torch==1.8.1, pytorch=1.12) or a key
    // (torch-version:, TORCH_VERSION=); not torchvision, matrix.torch, pytorch.org.
    size_t start = at >= 2 && text.compare(at - 2, 2, "py") == 0 ? at - 2 : at;
    if (start > 0 && name_char(text[start - 1])) continue;
    size_t i = at + 5;
    for (std::string_view suffix : {"-version", "_version"})
      if (std::string_view(text).substr(i).starts_with(suffix)) i += suffix.size();
    if (i < text.size() && name_char(text[i])) continue;
    size_t line = text.rfind('\n', start);
    bool key = text.find_first_not_of(" \t-\"'", line == std::string::npos ? 0 : line + 1) == start;
    if (i < text.size() && (text[i] == '"' || text[i] == '\'')) ++i;
    while (i < text.size() && text[i] == ' ') ++i;
    size_t eol = std::min(text.find('\n', i), text.size());
    if (!key || i >= text.size() || text[i] != ':' || (i + 1 < eol && text[i + 1] != ' ')) {
      lower_bounds(std::string_view(text).substr(i, eol - i), false, found);
      continue;
    }
    // A YAML key: `torch: 2.1`, `torch-version: [1.13.1, 2.0.0]`, or a block list below it.
    std::string_view value = trim(std::string_view(text).substr(i + 1, eol - i - 1));
    if (value.starts_with('[')) value = value.substr(1, value.find(']') - 1);
    if (!value.empty()) {
      lower_bounds(value, true, found);
      continue;
    }
    for (size_t l = eol + 1; l < text.size();) {
      size_t e = std::min(text.find('\n', l), text.size());
      std::string_view item = trim(std::string_view(text).substr(l, e - l));
      if (!item.starts_with('-')) break;
      lower_bounds(item.substr(1), true, found);
      l = e + 1;
    }
  }
  if (found.empty()) return std::nullopt;
  return *std::min_element(found.begin(), found.end(), version_less);
}

std::optional<std::string> readme_torch_pin_in(std::string_view raw) {
  // A heading's words decide what its lines state: requirements, or news and results.
  auto has = [](std::string_view text, const auto& words) {
    return std::any_of(std::begin(words), std::end(words), [&](std::string_view w) { return text.find(w) != std::string_view::npos; });
  };
  static constexpr std::string_view kSetup[] = {"requirement", "install", "setup", "set up", "environment",
                                                              "dependenc", "prerequisite", "getting started", "usage"};
  static constexpr std::string_view kStatement[] = {
      "require", "install", "tested", "test with", "developed with", "developed on", "built with", "depend",
      "prerequisite", "compatible", "support", "or later", "or newer", "or higher", "or above", "and above",
      "at least", "minimum", "python", "we use", "works with", "need"};
  // A line that names a torch it moved to or from, or another project's image, states
  // nothing about this code's own requirement.
  static constexpr std::string_view kNot[] = {"upgrade", "bump", "nvcr.io", "docker", "pull", "deprecat",
                                                            "no longer", "dropped", "drop support", "removed", "downgrad"};
  std::vector<std::string> found;
  // The heading levels (1 for `#`) whose sections are about setup, or news; 0: none.
  size_t setup = 0, news = 0;
  bool fenced = false;
  for (size_t b = 0; b < raw.size();) {
    size_t e = std::min(raw.find('\n', b), raw.size());
    std::string line;
    for (size_t i = b; i < e; ++i) line += static_cast<char>(std::tolower(static_cast<unsigned char>(raw[i])));
    b = e + 1;
    std::string_view t = trim(line);
    if (t.starts_with("```") || t.starts_with("~~~")) fenced = !fenced;
    if (!fenced && t.starts_with('#')) {
      size_t level = t.find_first_not_of('#');
      static constexpr std::string_view kNews[] = {"news", "update", "changelog", "change log", "release", "what's new",
                                                   "history", "result", "benchmark", "leaderboard", "record"};
      static constexpr std::string_view kMonths[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                                     "jul", "aug", "sep", "oct", "nov", "dec"};
      // A dated heading (`## March 23, 2026`) is news too; a section's subsections are of it.
      bool month = std::any_of(std::begin(kMonths), std::end(kMonths), [&](std::string_view m) {
        for (size_t at = t.find(m); at != std::string_view::npos; at = t.find(m, at + 1))
          if (at == 0 || !std::isalpha(static_cast<unsigned char>(t[at - 1]))) return true;  // not DINOv2
        return false;
      });
      bool dated = month && t.find_first_of("0123456789") != std::string_view::npos;
      if (!news || level <= news) news = has(t, kNews) || dated ? level : 0;
      if (!setup || level <= setup) setup = has(t, kSetup) ? level : 0;
      continue;
    }
    if (news || t.starts_with('|') || has(t, kNot)) continue;
    for (size_t at = t.find("torch"); at != std::string_view::npos; at = t.find("torch", at + 5)) {
      size_t start = at >= 2 && t.substr(at - 2, 2) == "py" ? at - 2 : at;
      if (start > 0 && std::isalnum(static_cast<unsigned char>(t[start - 1]))) continue;
      size_t i = at + 5;
      if (i < t.size() && (std::isalnum(static_cast<unsigned char>(t[i])) || t[i] == '_' || t[i] == '-' || t[i] == '.'))
        continue;  // torchvision, torch_npu, pytorch-lightning, torch.compile
      // `PyTorch 1.12`, `torch==1.8.1`, `PyTorch >= 1.13`, `PyTorch version 1.7.1`, `torch v2.0`,
      // `[PyTorch](http://pytorch.org) install = 1.4.0` (a Markdown link, then a word).
      if (i < t.size() && t[i] == ']') {
        ++i;
        if (i < t.size() && t[i] == '(') {
          size_t close = t.find(')', i);
          if (close == std::string_view::npos) continue;
          i = close + 1;
        }
      }
      while (i < t.size() && t[i] == ' ') ++i;
      if (t.substr(i).starts_with("version")) i += 7;
      else if (t.substr(i).starts_with("install")) i += 7;
      while (i < t.size() && (t[i] == ' ' || t[i] == ':')) ++i;
      std::string_view op;
      for (std::string_view o : {"==", ">=", "\u2265", "~=", "=", ">"})  // U+2265: the sign >=
        if (t.substr(i).starts_with(o)) {
          op = o;
          break;
        }
      i += op.size();
      while (i < t.size() && t[i] == ' ') ++i;
      if (i < t.size() && t[i] == 'v') ++i;
      if (i + 2 >= t.size() || !std::isdigit(static_cast<unsigned char>(t[i])) || t[i + 1] != '.') continue;
      std::string v = major_minor(t.substr(i));
      size_t end = i;
      while (end < t.size() && (std::isalnum(static_cast<unsigned char>(t[end])) || t[end] == '.')) ++end;
      bool plus = end < t.size() && t[end] == '+';
      // A statement of what the code needs: an operator, `1.12+`, a requirement's words, a
      // shell command that installs it, or an item of a setup section's list.
      bool item = t.starts_with("- ") || t.starts_with("* ") || (!t.empty() && std::isdigit(static_cast<unsigned char>(t[0])));
      if (!v.empty() && (!op.empty() || plus || has(t, kStatement) || fenced || (setup && item))) found.push_back(v);
    }
  }
  if (found.empty()) return std::nullopt;
  return *std::min_element(found.begin(), found.end(), version_less);
}

namespace {

bool yaml_name(const std::string& name) { return name.ends_with(".yml") || name.ends_with(".yaml"); }
bool requirements_name(const std::string& name) { return name.starts_with("requirements") && name.ends_with(".txt"); }
bool conda_name(const std::string& name) {
  return (name.starts_with("environment") || name.starts_with("conda")) && yaml_name(name);
}
// The CI files at a project's root, but those under .github/workflows/ (every YAML there).
constexpr const char* kCiFiles[] = {".circleci/config.yml", ".circleci/config.yaml", ".travis.yml", ".gitlab-ci.yml",
                                    "azure-pipelines.yml"};

// The oldest torch the CI files at a project's root install.
std::optional<std::string> ci_pin_at(const fs::path& root) {
  std::vector<fs::path> files;
  for (const char* ci : kCiFiles) files.push_back(root / ci);
  std::error_code ec;
  for (fs::directory_iterator it(root / ".github/workflows", ec), end; !ec && it != end; it.increment(ec))
    if (yaml_name(it->path().filename().string())) files.push_back(it->path());
  std::optional<std::string> oldest;
  for (const auto& p : files)
    if (auto v = ci_torch_pin_in(read_small(p)); v && (!oldest || version_less(*v, *oldest))) oldest = v;
  return oldest;
}

// A README or INSTALL file: README.md, readme.rst, README, INSTALL.md, ...
bool readme_name(const std::string& name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!lower.starts_with("readme") && !lower.starts_with("install")) return false;
  size_t dot = lower.find('.');
  if (dot == std::string::npos) return lower == "readme" || lower == "install";
  std::string ext = lower.substr(dot);
  return ext == ".md" || ext == ".rst" || ext == ".txt" || ext == ".markdown";
}

}  // namespace

const TorchVersionFinder::Listing& TorchVersionFinder::listing(const fs::path& dir) {
  auto [it, fresh] = listings_.try_emplace(dir.string());
  Listing& l = it->second;
  if (!fresh) return l;
  std::error_code ec;
  for (fs::directory_iterator e(dir, ec), end; !ec && e != end; e.increment(ec)) {
    std::string name = e->path().filename().string();
    if (requirements_name(name)) l.requirements.push_back(e->path());
    if (conda_name(name)) l.conda.push_back(e->path());
    if (readme_name(name)) l.readmes.push_back(e->path());
    l.python = l.python || name.ends_with(".py") || requirements_name(name) || name == "setup.cfg" || name == "pyproject.toml";
  }
  for (auto* v : {&l.requirements, &l.conda, &l.readmes}) std::sort(v->begin(), v->end());
  return l;
}

// The torch the README and INSTALL files of `dir` state the code needs, when `dir` is a
// Python project's (it holds a .py file, a requirements file, setup.py, setup.cfg or
// pyproject.toml): the README of a repository in another language, or of documentation,
// speaks of torch versions in general.
std::optional<std::string> TorchVersionFinder::readme_pin_at(const fs::path& dir) {
  const Listing& l = listing(dir);
  if (!l.python) return std::nullopt;
  std::optional<std::string> oldest;
  for (const auto& p : l.readmes)
    if (auto v = readme_torch_pin_in(read_small(p)); v && (!oldest || version_less(*v, *oldest))) oldest = v;
  return oldest;
}

std::optional<std::string> TorchVersionFinder::in_directory(const fs::path& dir) {
  std::vector<fs::path> candidates = {dir / "pyproject.toml", dir / "setup.cfg", dir / "setup.py"};
  const Listing& listed = listing(dir);
  const std::vector<fs::path>& conda = listed.conda;
  candidates.insert(candidates.end(), listed.requirements.begin(), listed.requirements.end());
  for (const auto& p : candidates) {
    std::string text = read_small(p);
    if (text.empty()) continue;
    if (auto v = torch_pin_in(text)) return v;
  }
  // A conda environment: its `pytorch` package, or `torch` in its pip section.
  for (const auto& p : conda) {
    std::string text = read_small(p);
    if (text.empty()) continue;
    if (auto v = conda_torch_pin_in(text)) return v;
    if (auto v = torch_pin_in(text)) return v;
  }
  return std::nullopt;
}

bool reads_torch_pin(const fs::path& path) {
  std::string name = path.filename().string();
  if (name == "pyproject.toml" || name == "setup.cfg" || name == "setup.py" || requirements_name(name) || conda_name(name))
    return true;
  std::string p = path.generic_string();
  for (const char* ci : kCiFiles)
    if (p.ends_with("/" + std::string(ci)) || p == ci) return true;
  return readme_name(name) || (yaml_name(name) && path.parent_path().generic_string().ends_with(".github/workflows"));
}

void TorchVersionFinder::forget() {
  std::lock_guard lock(mutex_);
  cache_.clear();
  stated_.clear();
  listings_.clear();
}

std::string TorchVersionFinder::for_file(const std::string& path) {
  std::error_code ec;
  const fs::path start = fs::absolute(fs::path(path), ec).parent_path();
  fs::path dir = start;
  if (ec) return "";
  std::vector<std::string> visited;
  std::string found;
  {
    std::lock_guard lock(mutex_);
    bool answered = false;  // by a pin in the chain, or a directory's cached answer
    for (int depth = 0; depth < 64 && !dir.empty(); ++depth) {
      std::string key = dir.string();
      if (auto it = cache_.find(key); it != cache_.end()) {
        found = it->second;
        answered = true;
        break;
      }
      visited.push_back(key);
      if (auto v = in_directory(dir)) {
        found = *v;
        answered = true;
        break;
      }
      if (fs::exists(dir / ".git", ec) || dir == dir.parent_path()) break;
      dir = dir.parent_path();
    }
    // Nothing pins torch up to the root: the oldest torch its CI installs.
    if (!answered && !visited.empty()) found = ci_pin_at(visited.back()).value_or("");
    for (const auto& d : visited) cache_[d] = found;
    if (found.empty()) found = stated_from(start);
  }
  return found;
}

std::string TorchVersionFinder::stated_from(fs::path dir) {
  // The nearest directory, from `dir` upwards to the project's top, whose README or
  // INSTALL file states a torch: each directory's answer is its own file's, else its
  // parent's.
  std::vector<std::string> chain;
  std::string found;
  std::error_code ec;
  for (int depth = 0; depth < 64 && !dir.empty(); ++depth) {
    std::string key = dir.string();
    if (auto it = stated_.find(key); it != stated_.end()) {
      found = it->second;
      break;
    }
    chain.push_back(key);
    if (auto v = readme_pin_at(dir)) {
      found = *v;
      break;
    }
    if (fs::exists(dir / ".git", ec) || dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  for (const auto& d : chain) stated_[d] = found;
  return found;
}

}  // namespace mlsem::driver
