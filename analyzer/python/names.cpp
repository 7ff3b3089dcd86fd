#include "python/names.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "core/text.h"

namespace mlsem::python {
namespace {

std::string_view last_component(std::string_view dotted) {
  size_t dot = dotted.rfind('.');
  return dot == std::string_view::npos ? dotted : dotted.substr(dot + 1);
}

// Names are short; lower-casing into a fixed buffer avoids an allocation per lookup
// (these run for every name the frontend sees).
struct Lower {
  char buf[64];
  size_t len = 0;
  explicit Lower(std::string_view s) {
    len = std::min(s.size(), sizeof buf);
    for (size_t i = 0; i < len; ++i) buf[i] = lower_ascii(s[i]);
  }
  operator std::string_view() const { return {buf, len}; }
  size_t find(std::string_view x) const { return std::string_view(*this).find(x); }
};

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

}  // namespace

CalleeName classify_callee(std::string_view canonical) {
  CalleeName out;
  out.name = last_component(canonical);
  std::string_view ns = canonical.substr(0, canonical.size() - out.name.size());
  if (!ns.empty()) ns.remove_suffix(1);  // the dot
  if (ns == "torch.nn.functional") out.ns = Namespace::kFunctional;
  else if (ns == "torch" || ns == "torch.special" || ns == "torch.linalg" || ns == "torch.Tensor")
    out.ns = Namespace::kTorch;
  else if (ns == "einops") out.ns = Namespace::kEinops;
  else if (ns == "math" || ns == "numpy") out.ns = Namespace::kMath;
  return out;
}

bool is_scalar_name(std::string_view dotted) {
  Lower low(last_component(dotted));
  std::string_view n = low;
  static constexpr std::array<std::string_view, 30> kExact = {
      "scale", "scaling", "temperature", "temp", "head_dim", "head_size", "d_k", "d_head",
      "dim_head", "d_model", "n_embd", "n_head", "n_heads", "num_heads", "n_kv_head",
      "norm_factor", "eps", "epsilon", "hidden_size", "embed_dim", "block_size", "seq_len",
      "vocab_size", "n_layer", "sqrt_d", "inv_sqrt_d", "rsqrt_d", "dropout_p", "attn_pdrop",
      "resid_pdrop"};
  if (std::find(kExact.begin(), kExact.end(), n) != kExact.end()) return true;
  return ends_with(n, "scale") || ends_with(n, "_scaling") || starts_with(n, "n_") ||
         starts_with(n, "num_") || ends_with(n, "_dim") || ends_with(n, "_size") ||
         n.find("temperature") != std::string_view::npos;
}

bool is_config_root(std::string_view name) {
  Lower low(name);
  std::string_view n = low;
  return n == "config" || n == "cfg" || n == "args" || n == "hparams" || n == "conf" ||
         n == "params" || n == "opts" || n == "hp" || ends_with(n, "_config") ||
         ends_with(n, "_cfg") || ends_with(n, "_args");
}

bool is_optimizer_name(std::string_view dotted) {
  Lower low(last_component(dotted));
  std::string_view n = low;
  if (n.find("sched") != std::string_view::npos) return false;
  return n.find("optim") != std::string_view::npos || n == "opt" || starts_with(n, "opt_") ||
         ends_with(n, "_opt");
}

bool is_scaler_step(std::string_view callee, std::string_view first, std::string_view second,
                    std::string_view optimizer_kw) {
  Lower low(last_component(callee));
  std::string_view n = low;
  if (n.find("scaler") == std::string_view::npos || n.find("lr") != std::string_view::npos ||
      n.find("sched") != std::string_view::npos || n.find("warmup") != std::string_view::npos)
    return false;
  if (first.empty() || is_optimizer_name(first)) return false;
  return (!second.empty() && is_optimizer_name(second)) || (!optimizer_kw.empty() && is_optimizer_name(optimizer_kw));
}

bool is_mask_name(std::string_view dotted) {
  Lower low(last_component(dotted));
  std::string_view n = low;
  return n.find("mask") != std::string_view::npos || n.find("causal") != std::string_view::npos;
}

bool contains_causal(std::string_view dotted) {
  if (dotted.size() > sizeof(Lower::buf)) dotted = dotted.substr(dotted.size() - sizeof(Lower::buf));
  return Lower(dotted).find("causal") != std::string_view::npos;
}

bool is_class_name(std::string_view canonical) {
  // Called names that start upper-case are classes: nn.GELU, optim.SGD, CIFAR10.
  std::string_view last = last_component(canonical);
  return !last.empty() && std::isupper(static_cast<unsigned char>(last[0]));
}

std::string dtype_name(std::string_view text) {
  std::string_view n = text;
  if (starts_with(n, "torch.")) n.remove_prefix(6);
  else if (starts_with(n, "dtype=torch.")) n.remove_prefix(12);
  if (n == "float16" || n == "half") return "float16";
  if (n == "bfloat16") return "bfloat16";
  if (n == "float32" || n == "float") return "float32";
  if (n == "float64" || n == "double") return "float64";
  if (n == "int64" || n == "long") return "int64";
  if (n == "int32" || n == "int") return "int32";
  if (n == "bool") return "bool";
  if (n == "float8_e4m3fn" || n == "float8_e5m2") return std::string(n);
  return "";
}

std::string_view module_op(std::string_view cls) {
  std::string_view n = last_component(cls);
  // A project's own dropout layer (cvnets' `Dropout`, a subclass of nn.Dropout imported
  // from the project): named so, it zeroes and rescales like torch's.
  if (!starts_with(cls, "torch.nn."))
    return n == "Dropout" || n == "Dropout1d" || n == "Dropout2d" || n == "Dropout3d" ? "dropout" : "";
  struct Entry {
    std::string_view cls, op;
  };
  static constexpr std::array<Entry, 36> kModules = {{
      {"Linear", "linear"},          {"LazyLinear", "linear"},
      {"Conv1d", "conv"},            {"Conv2d", "conv"},
      {"Conv3d", "conv"},            {"Embedding", "embedding"},
      {"LayerNorm", "layer_norm"},   {"RMSNorm", "rms_norm"},
      {"GroupNorm", "group_norm"},   {"BatchNorm1d", "batch_norm"},
      {"BatchNorm2d", "batch_norm"}, {"BatchNorm3d", "batch_norm"},
      {"Softmax", "softmax"},        {"LogSoftmax", "log_softmax"},
      {"Dropout", "dropout"},        {"Dropout1d", "dropout"},
      {"Dropout2d", "dropout"},      {"Dropout3d", "dropout"},
      {"GELU", "gelu"},              {"ReLU", "relu"},
      {"SiLU", "silu"},              {"Tanh", "tanh"},
      {"Sigmoid", "sigmoid"},        {"LeakyReLU", "leaky_relu"},
      {"Softplus", "softplus"},      {"Mish", "mish"},
      {"Hardswish", "hardswish"},    {"Identity", "identity"},
      {"CrossEntropyLoss", "cross_entropy"}, {"NLLLoss", "nll_loss"},
      {"Sequential", "sequential"},  {"ModuleList", "container"},
      {"ModuleDict", "container"},   {"ReLU6", "relu"},
      {"Flatten", "reshape"},        {"Unflatten", "reshape"},
  }};
  for (const Entry& e : kModules)
    if (e.cls == n) return e.op;
  return "";
}

std::optional<EinsumMatmul> einsum_as_matmul(std::string_view spec) {
  std::string s;
  for (char c : spec)
    if (c != ' ' && c != '.') s.push_back(c);  // "..." batch dims play no part
  size_t arrow = s.find("->");
  if (arrow == std::string::npos) return std::nullopt;
  std::string_view ins = std::string_view(s).substr(0, arrow);
  std::string_view out = std::string_view(s).substr(arrow + 2);
  size_t comma = ins.find(',');
  if (comma == std::string_view::npos || ins.find(',', comma + 1) != std::string_view::npos)
    return std::nullopt;
  std::string_view a = ins.substr(0, comma), b = ins.substr(comma + 1);
  if (a.size() < 2 || b.size() < 2) return std::nullopt;
  char contracted = 0;
  for (char c : a) {
    if (b.find(c) != std::string_view::npos && out.find(c) == std::string_view::npos) {
      if (contracted != 0) return std::nullopt;  // more than one contracted index
      contracted = c;
    }
  }
  if (contracted == 0) return std::nullopt;
  // a @ b reads a[..., i, c] and b[..., c, j] and writes [..., i, j]: the output must list
  // a's free index, then b's, last (else the product is the transpose of the einsum's).
  auto free_last = [&](std::string_view x) {
    for (auto it = x.rbegin(); it != x.rend(); ++it)
      if (*it != contracted) return *it;
    return '\0';
  };
  if (out.size() < 2 || out[out.size() - 2] != free_last(a) || out.back() != free_last(b)) return std::nullopt;
  EinsumMatmul m;
  if (a.back() != contracted) {
    if (a[a.size() - 2] != contracted) return std::nullopt;
    m.transpose_a = true;
  }
  if (b[b.size() - 2] != contracted) {
    if (b.back() != contracted) return std::nullopt;
    m.transpose_b = true;
  }
  return m;
}

std::string_view small_image_dataset(std::string_view text) {
  for (std::string_view d : kSmallImageDatasets)
    for (size_t at = text.find(d); at != std::string_view::npos; at = text.find(d, at + 1))
      if (at + d.size() < text.size() && text[at + d.size()] == '(') return d;
  return {};
}

}  // namespace mlsem::python
