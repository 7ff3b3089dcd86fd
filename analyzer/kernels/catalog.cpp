#include "kernels/catalog.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

namespace mlsem::kernels {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The text of the first "# " heading, or "" when there is none.
std::string first_heading(const std::string& markdown) {
  std::istringstream lines(markdown);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# ", 0) == 0) {
      std::string title = line.substr(2);
      while (!title.empty() && (title.back() == '\r' || title.back() == ' ')) title.pop_back();
      return title;
    }
  }
  return "";
}

// "16384x8192" -> 134217728; 0 when the text is not dimensions.
int64_t elements_of(const std::string& shape) {
  int64_t product = 1;
  std::istringstream parts(shape);
  std::string dim;
  bool any = false;
  while (std::getline(parts, dim, 'x')) {
    if (dim.empty() || dim.find_first_not_of("0123456789") != std::string::npos) return 0;
    product *= std::stoll(dim);
    any = true;
  }
  return any ? product : 0;
}

std::string short_dtype(const std::string& dtype) {
  static const std::map<std::string, std::string> names{{"bfloat16", "bf16"}, {"float16", "fp16"}, {"float32", "fp32"}};
  auto it = names.find(dtype);
  return it == names.end() ? dtype : it->second;
}

std::string_view strip_prefix(std::string_view name) {
  if (name.rfind("kernels/", 0) == 0) name.remove_prefix(8);
  while (!name.empty() && name.back() == '/') name.remove_suffix(1);
  return name;
}

std::string text_field(const json& run, const char* key) {
  auto it = run.find(key);
  return it != run.end() && it->is_string() ? it->get<std::string>() : "";
}

// Adds the fused-vs-eager pairs of one results document; returns the first problem found.
std::string read_results(const json& doc, std::vector<Measurement>& out, std::vector<Run>& runs) {
  if (!doc.is_object()) return "results must be a JSON object";
  if (!doc.contains("device") || !doc["device"].is_string()) return "missing string field 'device'";
  if (!doc.contains("runs") || !doc["runs"].is_array()) return "missing array field 'runs'";
  const std::string device = doc["device"];
  struct Pair {
    double fused_ms = 0, eager_ms = 0, baseline_ms = 0;
    bool fused_correct = false;
  };
  std::map<std::tuple<std::string, std::string, std::string, std::string>, Pair> pairs;
  std::vector<std::tuple<std::string, std::string, std::string, std::string>> order;
  for (size_t i = 0; i < doc["runs"].size(); ++i) {
    const json& run = doc["runs"][i];
    if (!run.is_object() || !run.contains("ms") || !run["ms"].is_number())
      return "runs[" + std::to_string(i) + "]: missing number field 'ms'";
    for (const char* key : {"kernel", "shape", "dtype", "variant"})
      if (text_field(run, key).empty()) return "runs[" + std::to_string(i) + "]: missing string field '" + key + "'";
    auto key = std::make_tuple(text_field(run, "kernel"), text_field(run, "mode"), text_field(run, "shape"),
                               text_field(run, "dtype"));
    if (!pairs.count(key)) order.push_back(key);
    Pair& pair = pairs[key];
    const std::string variant = text_field(run, "variant");
    runs.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key), device, variant,
                    run["ms"].get<double>(), run.contains("correct") && run["correct"].is_boolean() && run["correct"].get<bool>()});
    if (variant == "fused") {
      pair.fused_ms = run["ms"].get<double>();
      pair.fused_correct = run.contains("correct") && run["correct"].is_boolean() && run["correct"].get<bool>();
    } else if (variant == "torch_eager") {
      pair.eager_ms = run["ms"].get<double>();
    } else if (variant == "baseline") {
      pair.baseline_ms = run["ms"].get<double>();
    }
  }
  for (const auto& key : order) {
    const Pair& pair = pairs[key];
    // A speedup is quoted only for a fused kernel that was checked correct in that run.
    if (pair.fused_ms <= 0 || pair.eager_ms <= 0 || !pair.fused_correct) continue;
    const auto& [kernel, mode, shape, dtype] = key;
    out.push_back({kernel, mode, shape, dtype, device, elements_of(shape), pair.fused_ms, pair.eager_ms,
                   pair.baseline_ms});
  }
  return "";
}

}  // namespace

Catalog Catalog::load(const fs::path& kernels_dir, std::vector<FileError>& errors) {
  Catalog catalog;
  catalog.dir_ = kernels_dir;
  std::error_code ec;
  if (!fs::is_directory(kernels_dir, ec)) {
    errors.push_back({kernels_dir.string(), "kernels directory not found"});
    return catalog;
  }
  for (const auto& entry : fs::directory_iterator(kernels_dir, ec)) {
    const fs::path readme = entry.path() / "README.md";
    if (!entry.is_directory() || !fs::is_regular_file(readme)) continue;
    catalog.kernels_.push_back({entry.path().filename().string(), entry.path(), first_heading(read_text(readme))});
  }
  std::sort(catalog.kernels_.begin(), catalog.kernels_.end(),
            [](const KernelEntry& a, const KernelEntry& b) { return a.name < b.name; });

  std::vector<fs::path> results;
  for (const auto& entry : fs::directory_iterator(kernels_dir / "results", ec))
    if (entry.is_regular_file() && entry.path().extension() == ".json") results.push_back(entry.path());
  std::sort(results.begin(), results.end());
  for (const fs::path& path : results) {
    json doc;
    try {
      doc = json::parse(read_text(path));
    } catch (const json::parse_error& e) {
      errors.push_back({path.string(), std::string("malformed results JSON: ") + e.what()});
      continue;
    }
    std::vector<Measurement> found;
    std::vector<Run> runs;
    std::string problem;
    try {
      problem = read_results(doc, found, runs);
    } catch (const json::exception& e) {  // a field of an unexpected type
      problem = e.what();
    }
    if (!problem.empty()) {
      errors.push_back({path.string(), "malformed results: " + problem});
      continue;
    }
    catalog.measurements_.insert(catalog.measurements_.end(), found.begin(), found.end());
    catalog.runs_.insert(catalog.runs_.end(), runs.begin(), runs.end());
  }
  return catalog;
}

const KernelEntry* Catalog::find(std::string_view name) const {
  name = strip_prefix(name);
  for (const KernelEntry& k : kernels_)
    if (k.name == name) return &k;
  return nullptr;
}

std::string Catalog::readme(std::string_view name) const {
  const KernelEntry* k = find(name);
  return k ? read_text(k->dir / "README.md") : "";
}

const Measurement* Catalog::nearest(std::string_view name, std::span<const int64_t> shape) const {
  name = strip_prefix(name);
  int64_t wanted = 0;
  if (!shape.empty()) {
    wanted = 1;
    for (int64_t d : shape) wanted *= d;
  }
  const Measurement* best = nullptr;
  for (const Measurement& m : measurements_) {
    if (m.kernel != name || m.elements <= 0) continue;
    if (!best) {
      best = &m;
    } else if (wanted > 0) {  // nearest in log scale; ties go to the larger shape
      const double d_new = std::abs(std::log(double(m.elements) / double(wanted)));
      const double d_best = std::abs(std::log(double(best->elements) / double(wanted)));
      if (d_new < d_best || (d_new == d_best && m.elements > best->elements)) best = &m;
    } else if (m.elements > best->elements) {
      best = &m;
    }
  }
  return best;
}

std::vector<Run> Catalog::runs_of(const Measurement& m) const {
  std::vector<Run> out;
  for (const Run& r : runs_)
    if (r.kernel == m.kernel && r.mode == m.mode && r.shape == m.shape && r.dtype == m.dtype && r.device == m.device)
      out.push_back(r);
  return out;
}

std::string Catalog::speedup_summary(std::string_view name, std::span<const int64_t> shape, Against against) const {
  const Measurement* best = nearest(name, shape);
  if (!best) return "no measurement yet";
  const bool naive = against == Against::naive_cuda && best->baseline_ms > 0;
  const double ratio = (naive ? best->baseline_ms : best->eager_ms) / best->fused_ms;
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.1fx %s", ratio >= 1 ? ratio : 1 / ratio, ratio >= 1 ? "faster" : "slower");
  std::string text = "fused: " + std::string(buffer) + (naive ? " than the naive CUDA form on " : " than the eager form on ") +
                     best->device + " at " + best->shape +
                     " " + short_dtype(best->dtype);
  if (!best->mode.empty()) text += " (" + best->mode + ")";
  return text;
}

std::string Catalog::ladder_table(std::string_view name) const {
  name = strip_prefix(name);
  struct Rung {
    const char* variant;
    const char* title;
  };
  static constexpr Rung kRungs[] = {{"torch_eager", "eager PyTorch"}, {"torch_library", "library call"},
                                    {"torch_compile", "torch.compile"}, {"triton", "Triton"},
                                    {"baseline", "naive CUDA"},          {"fused", "CUDA"}};
  std::vector<std::string> devices;
  for (const Run& r : runs_)
    if (r.kernel == name && std::find(devices.begin(), devices.end(), r.device) == devices.end())
      devices.push_back(r.device);
  std::string out;
  for (const std::string& device : devices) {
    // rows in file order, keyed by (mode, shape, dtype)
    std::vector<std::array<std::string, 3>> keys;
    std::map<std::array<std::string, 3>, std::map<std::string, const Run*>> cells;
    for (const Run& r : runs_) {
      if (r.kernel != name || r.device != device) continue;
      std::array<std::string, 3> key{r.mode, r.shape, short_dtype(r.dtype)};
      if (!cells.count(key)) keys.push_back(key);
      cells[key][r.variant] = &r;
    }
    std::vector<const Rung*> columns;  // the rungs this device measured at all
    for (const Rung& rung : kRungs)
      for (const auto& key : keys)
        if (cells[key].count(rung.variant)) {
          columns.push_back(&rung);
          break;
        }
    std::vector<std::vector<std::string>> table{{"mode", "shape", "dtype"}};
    for (const Rung* rung : columns) table[0].push_back(rung->title);
    for (const auto& key : keys) {
      std::vector<std::string> row{key[0].empty() ? "-" : key[0], key[1], key[2]};
      const auto& by_variant = cells[key];
      const auto eager = by_variant.find("torch_eager");
      const double eager_ms = eager != by_variant.end() && eager->second->correct ? eager->second->ms : 0;
      for (const Rung* rung : columns) {
        const auto it = by_variant.find(rung->variant);
        if (it == by_variant.end() || it->second->ms <= 0) {
          row.push_back("-");
          continue;
        }
        char cell[64];
        if (!it->second->correct) {
          std::snprintf(cell, sizeof cell, "%.4g ms wrong", it->second->ms);
        } else if (eager_ms > 0) {
          std::snprintf(cell, sizeof cell, "%.4g ms %.2fx", it->second->ms, eager_ms / it->second->ms);
        } else {
          std::snprintf(cell, sizeof cell, "%.4g ms", it->second->ms);
        }
        row.push_back(cell);
      }
      table.push_back(row);
    }
    std::vector<size_t> width(table[0].size(), 0);
    for (const auto& row : table)
      for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    out += (out.empty() ? "" : "\n") + device + "\n";
    for (const auto& row : table) {
      std::string line = " ";
      for (size_t i = 0; i < row.size(); ++i) {
        const bool right = i >= 3;  // times right-aligned
        const std::string pad(width[i] - row[i].size(), ' ');
        line += "  " + (right ? pad + row[i] : row[i] + (i + 1 < row.size() ? pad : ""));
      }
      out += line + "\n";
    }
  }
  return out;
}

std::vector<std::string> Catalog::bench_command(std::string_view name, const std::string& out_json) const {
  const KernelEntry* k = find(name);
  if (!k) return {};
  return {"python3", (dir_ / "bench" / "bench.py").string(), "--kernel", k->name, "--out", out_json};
}

}  // namespace mlsem::kernels
