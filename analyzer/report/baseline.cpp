#include "report/baseline.h"

#include <nlohmann/json.hpp>

#include "driver/driver.h"

namespace mlsem::report {
namespace {

using json = nlohmann::ordered_json;

std::string key(const std::string& path, const std::string& rule, const std::string& function, const std::string& fingerprint) {
  return path + '\0' + rule + '\0' + function + '\0' + fingerprint;
}

}  // namespace

std::string baseline_json(const Report& report) {
  json findings = json::array();
  for (const Finding& f : report.findings)
    findings.push_back({{"path", f.path},
                        {"rule", f.rule},
                        {"function", f.function},
                        {"fingerprint", f.fingerprint},
                        {"line", f.range.begin.line},
                        {"message", f.message}});
  json root = {{"version", 1}, {"tool", "mlsem"}, {"mlsem_version", std::string(version())}, {"findings", findings}};
  return root.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::optional<Baseline> read_baseline(const std::string& text, std::string& error) {
  json root = json::parse(text, nullptr, false);
  if (root.is_discarded()) return error = "not valid JSON", std::nullopt;
  if (!root.is_object() || root.value("tool", "") != "mlsem" || !root.contains("findings") || !root["findings"].is_array())
    return error = "not an mlsem baseline (written by --write-baseline)", std::nullopt;
  if (root.value("version", 0) != 1) return error = "unsupported baseline version", std::nullopt;
  Baseline baseline;
  size_t index = 0;
  for (const json& entry : root["findings"]) {
    ++index;
    auto text_field = [&](const char* name) -> std::optional<std::string> {
      auto it = entry.find(name);
      if (it == entry.end() || !it->is_string()) return std::nullopt;
      return it->get<std::string>();
    };
    auto path = text_field("path"), rule = text_field("rule"), function = text_field("function"),
         fingerprint = text_field("fingerprint");
    if (!entry.is_object() || !path || !rule || !function || !fingerprint)
      return error = "entry " + std::to_string(index) + ": needs path, rule, function and fingerprint strings", std::nullopt;
    ++baseline.counts[key(*path, *rule, *function, *fingerprint)];
  }
  return baseline;
}

size_t apply_baseline(Report& report, Baseline baseline) {
  std::vector<Finding> kept;
  size_t dropped = 0;
  for (Finding& f : report.findings) {
    auto it = baseline.counts.find(key(f.path, f.rule, f.function, f.fingerprint));
    if (it != baseline.counts.end() && it->second > 0) {
      --it->second;
      ++dropped;
      continue;
    }
    kept.push_back(std::move(f));
  }
  report.findings = std::move(kept);
  return dropped;
}

}  // namespace mlsem::report
