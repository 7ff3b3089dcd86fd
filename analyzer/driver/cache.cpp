#include "driver/cache.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

namespace fs = std::filesystem;
using nlohmann::json;

namespace mlsem::driver {
namespace {

constexpr const char* kTag =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by mlsem.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n";

json range_json(const Range& r) {
  return json::array({r.begin.line, r.begin.column, r.end.line, r.end.column, r.begin_byte, r.end_byte});
}

Range range_of(const json& j) {
  return {{j.at(0).get<uint32_t>(), j.at(1).get<uint32_t>()},
          {j.at(2).get<uint32_t>(), j.at(3).get<uint32_t>()},
          j.at(4).get<uint32_t>(),
          j.at(5).get<uint32_t>()};
}

json finding_json(const Finding& f) {
  json evidence = json::array();
  for (const Evidence& e : f.evidence) evidence.push_back({e.text, e.present, e.weight, range_json(e.range), e.related});
  return {{"rule", f.rule},         {"name", f.rule_name},   {"concept", f.concept_id},
          {"severity", f.severity}, {"message", f.message},  {"path", f.path},
          {"range", range_json(f.range)}, {"function", f.function}, {"confidence", f.confidence},
          {"evidence", evidence},   {"fix", f.fix},          {"kernel", f.kernel ? json(*f.kernel) : json(nullptr)},
          {"context", f.context},   {"context_kind", f.context_kind},
          {"level", f.level}};
}

Finding finding_of(const json& j) {
  Finding f;
  f.rule = j.at("rule");
  f.rule_name = j.at("name");
  f.concept_id = j.at("concept");
  f.severity = j.at("severity");
  f.message = j.at("message");
  f.path = j.at("path");
  f.range = range_of(j.at("range"));
  f.function = j.at("function");
  f.confidence = j.at("confidence");
  for (const json& e : j.at("evidence"))
    f.evidence.push_back({e.at(0).get<std::string>(), e.at(1).get<bool>(), e.at(2).get<double>(), range_of(e.at(3)),
                          e.size() > 4 && e.at(4).get<bool>()});
  f.fix = j.at("fix");
  if (!j.at("kernel").is_null()) f.kernel = j.at("kernel").get<std::string>();
  f.context = j.value("context", "");
  f.context_kind = j.value("context_kind", "");
  f.level = j.value("level", "");  // the rule's optimization level
  return f;
}

}  // namespace

std::string content_hash(std::string_view data) {
  uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
  for (unsigned char c : data) {
    a = (a ^ c) * 0x100000001b3ull;
    b = (b ^ c) * 0x100000001b3ull;
    b ^= b >> 29;
  }
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(a), static_cast<unsigned long long>(b));
  return hex;
}

fs::path project_root(const fs::path& start) {
  std::error_code ec;
  fs::path dir = fs::absolute(start, ec).lexically_normal();
  for (fs::path at = dir; !at.empty(); at = at.parent_path()) {
    for (const char* marker : {".git", "pyproject.toml", "mlsem.toml"})
      if (fs::exists(at / marker, ec)) return at;
    if (at == at.root_path()) break;
  }
  return dir;
}

std::string data_hash(const fs::path& data_dir) {
  std::vector<fs::path> files;
  for (const char* sub : {"concepts", "patterns", "rules"}) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(data_dir / sub, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec)) files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  std::string all;
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    all += file.lexically_relative(data_dir).generic_string() + '\0' + content_hash(text.str()) + '\n';
  }
  return content_hash(all);
}

std::optional<CachedResult> Cache::load(const std::string& key) const {
  // v2: findings carry the rule's optimization level; v1 entries are not read.
  std::ifstream in(dir_ / "v2" / key.substr(0, 2) / (key + ".json"), std::ios::binary);
  if (!in) return std::nullopt;
  try {
    json j = json::parse(in);
    CachedResult result;
    result.analyzed = j.at("analyzed");
    for (const json& f : j.at("findings")) result.findings.push_back(finding_of(f));
    for (const json& e : j.at("errors"))
      result.errors.push_back({e.at(0).get<std::string>(), e.at(1).get<std::string>(), e.at(2).get<uint32_t>(),
                               e.at(3).get<uint32_t>()});
    return result;
  } catch (const std::exception&) {
    return std::nullopt;  // a damaged entry is a miss
  }
}

void Cache::store(const std::string& key, const CachedResult& result) const {
  std::error_code ec;
  fs::path bucket = dir_ / "v2" / key.substr(0, 2);
  fs::create_directories(bucket, ec);
  if (ec) return;
  if (!fs::exists(dir_ / "CACHEDIR.TAG", ec)) std::ofstream(dir_ / "CACHEDIR.TAG", std::ios::binary) << kTag;
  if (!fs::exists(dir_ / ".gitignore", ec)) std::ofstream(dir_ / ".gitignore", std::ios::binary) << "*\n";
  json j = {{"analyzed", result.analyzed}, {"findings", json::array()}, {"errors", json::array()}};
  for (const Finding& f : result.findings) j["findings"].push_back(finding_json(f));
  for (const FileError& e : result.errors) j["errors"].push_back({e.path, e.message, e.line, e.column});
  // Written aside and renamed: a reader (or a parallel run) never sees half an entry.
  static std::atomic<unsigned> counter{0};
  fs::path temporary = bucket / (key + ".tmp" + std::to_string(getpid()) + "." + std::to_string(counter++));
  {
    std::ofstream out(temporary, std::ios::binary);
    out << j.dump(-1, ' ', false, json::error_handler_t::replace);
    if (!out) {
      fs::remove(temporary, ec);
      return;
    }
  }
  fs::rename(temporary, bucket / (key + ".json"), ec);
  if (ec) fs::remove(temporary, ec);
}

}  // namespace mlsem::driver
