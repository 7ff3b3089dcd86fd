#include "ir/print.h"

#include <cmath>
#include <cstdio>

namespace mlsem::ir {
namespace {

std::string range_text(const Range& r) {
  if (!r.valid()) return "@?";
  return "@" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column) + "-" +
         std::to_string(r.end.line) + ":" + std::to_string(r.end.column);
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void append_attrs(std::string& out, const std::map<std::string, Attr>& attrs) {
  for (const auto& [key, value] : attrs) out += " " + key + "=" + attr_to_text(value);
}

}  // namespace

std::string attr_to_text(const Attr& value) {
  if (const bool* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const int64_t* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (const double* d = std::get_if<double>(&value)) {
    if (std::isinf(*d)) return *d < 0 ? "-inf" : "inf";
    if (std::isnan(*d)) return "nan";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.10g", *d);
    std::string s = buf;
    // Keep reals recognizable as reals: 1 -> 1.0.
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s;
  }
  return quoted(std::get<std::string>(value));
}

std::string to_text(const Module& module) {
  std::string out = "module " + module.path + " (" + module.language + ")";
  append_attrs(out, module.attrs);
  out += "\n";
  for (const Function& f : module.functions) {
    out += "function " + f.name;
    append_attrs(out, f.attrs);
    out += " " + range_text(f.range) + "\n";
    for (size_t r = 1; r < f.regions.size(); ++r) {
      const Region& region = f.regions[r];
      out += "  region " + std::to_string(r) + " " + region.kind;
      if (region.parent != 0) out += " parent=" + std::to_string(region.parent);
      append_attrs(out, region.attrs);
      out += " " + range_text(region.range) + "\n";
    }
    for (size_t i = 0; i < f.nodes.size(); ++i) {
      const Node& n = f.nodes[i];
      out += "  %" + std::to_string(i) + " = " + n.op;
      for (size_t k = 0; k < n.inputs.size(); ++k)
        out += (k == 0 ? " %" : ", %") + std::to_string(n.inputs[k]);
      append_attrs(out, n.attrs);
      out += " " + range_text(n.range);
      if (n.region != 0) out += " in region " + std::to_string(n.region);
      out += "\n";
    }
  }
  for (const Diagnostic& d : module.diagnostics)
    out += "diagnostic " + range_text(d.range) + " " + d.message + "\n";
  for (const auto& [line, codes] : module.suppressions) {
    out += "suppress line " + std::to_string(line) + ":";
    if (codes.empty()) out += " all";
    for (size_t i = 0; i < codes.size(); ++i) out += (i == 0 ? " " : ", ") + codes[i];
    out += "\n";
  }
  return out;
}

}  // namespace mlsem::ir
