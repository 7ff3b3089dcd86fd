// Norm and layer facts (norm_facts.h). A stage of its own, run after lowering: it only adds
// attributes to the `mean` nodes of norm classes and to biased Linear/Conv nodes. Only classes whose methods compute a `mean` are looked at, and only
// the places their name is followed by '(' in the text, so most files cost nothing.
#include "python/norm_facts.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "python/names.h"
#include "python/syntax.h"

namespace mlsem::python {
namespace {

// Keyword names under which norm classes take their normalized shape.
bool is_shape_keyword(std::string_view k) {
  return k == "hidden_size" || k == "normalized_shape" || k == "dim" || k == "size" || k == "shape" ||
         k == "d_model" || k == "hidden_dim" || k == "num_features" || k == "embed_dim";
}

// A literal tuple or list of at least two elements.
bool is_multi_dim(TSNode n, const Syntax& S) {
  while (!ts_node_is_null(n) && ts_node_symbol(n) == S.parenthesized_expression && ts_node_named_child_count(n) == 1)
    n = ts_node_named_child(n, 0);
  if (ts_node_is_null(n)) return false;
  TSSymbol k = ts_node_symbol(n);
  return (k == S.tuple || k == S.list) && ts_node_named_child_count(n) >= 2;
}

// The shape argument of a constructor call when it is multi-dimensional (the first
// positional argument, or a keyword argument with a shape's name), else null.
TSNode multi_dim_shape(TSNode call, const Syntax& S, std::string_view src) {
  TSNode args = field(call, S.f_arguments);
  if (ts_node_is_null(args) || ts_node_symbol(args) != S.argument_list) return TSNode{};
  uint32_t n = ts_node_named_child_count(args);
  bool first_positional = true;
  for (uint32_t i = 0; i < n; ++i) {
    TSNode a = ts_node_named_child(args, i);
    TSSymbol k = ts_node_symbol(a);
    if (k == S.comment) continue;
    if (k == S.keyword_argument) {
      if (is_shape_keyword(text_of(field(a, S.f_name), src)) && is_multi_dim(field(a, S.f_value), S)) return a;
      continue;
    }
    if (first_positional && is_multi_dim(a, S)) return a;
    first_positional = false;
  }
  return TSNode{};
}

// Whether the file builds models that load published weights (pretrained=, a weights
// URL or WeightsEnum, from_pretrained, load_state_dict, load_checkpoint): their
// parameter names are fixed by checkpoints that already exist.
bool loads_weights(std::string_view t) {
  std::string text = lower_ascii(t);
  for (std::string_view w : {"pretrained", "load_state_dict", "model_urls", "load_url", "hf_hub", "load_checkpoint",
                             "weightsenum", "state_dict_from_url"})
    if (contains(text, w)) return true;
  return false;
}

}  // namespace

void add_norm_facts(const SourceFile& file, TSNode root, ir::Module& out) {
  std::string_view src = file.text;
  // Classes whose methods compute a mean, with the byte spans of those methods.
  std::map<std::string, std::vector<std::pair<uint32_t, uint32_t>>> classes;
  for (const ir::Function& f : out.functions) {
    size_t dot = f.name.rfind('.');
    if (dot == std::string::npos || dot == 0) continue;
    bool has_mean = false;
    for (const ir::Node& n : f.nodes) has_mean = has_mean || n.op == "mean";
    if (!has_mean) continue;
    std::string cls = f.name.substr(0, dot);
    if (size_t outer = cls.rfind('.'); outer != std::string::npos) cls = cls.substr(outer + 1);
    classes[cls].push_back({f.range.begin_byte, f.range.end_byte});
  }
  if (classes.empty()) return;
  const Syntax& S = Syntax::get();
  auto mark = [&](const std::vector<std::pair<uint32_t, uint32_t>>& spans, const char* key, const std::string& why) {
    for (ir::Function& f : out.functions)
      for (ir::Node& n : f.nodes) {
        if (n.op != "mean") continue;
        for (const auto& [b, e] : spans)
          if (n.range.begin_byte >= b && n.range.end_byte <= e) {
            n.attrs[key] = why;
            break;
          }
      }
  };
  // `_keep_in_fp32_modules = ["input_layernorm", ...]` (transformers): the norms'
  // weights stay fp32 while activations are fp16/bf16.
  std::string fp32_weights;
  for (size_t at = src.find("_keep_in_fp32_modules"); at != std::string_view::npos && fp32_weights.empty();
       at = src.find("_keep_in_fp32_modules", at + 1)) {
    size_t eol = src.find('\n', at);
    std::string line = lower_ascii(src.substr(at, eol == std::string_view::npos ? std::string_view::npos : eol - at));
    if (line.find("norm") != std::string::npos && line.find("= [") != std::string::npos)
      fp32_weights = "the model keeps its norms' weights in fp32 (`_keep_in_fp32_modules`, line " +
                     std::to_string(std::count(src.begin(), src.begin() + static_cast<long>(at), '\n') + 1) + ")";
  }
  for (const auto& [cls, spans] : classes) {
    if (!fp32_weights.empty()) mark(spans, "weight_fp32", fp32_weights);
    // Cepstral mean and variance normalization: input features, normalized once per
    // call before the model (Moonshine's frame CMVN on raw audio), not a layer norm.
    if (lower_ascii(cls).find("cmvn") != std::string::npos)
      mark(spans, "cold", "cold: " + cls + " normalizes the input features (CMVN) once per call, not at model width in every layer");
    std::string why;
    for (size_t at = src.find(cls + "("); at != std::string_view::npos && why.empty(); at = src.find(cls + "(", at + 1)) {
      if (at > 0) {
        char before = src[at - 1];
        if (std::isalnum(static_cast<unsigned char>(before)) || before == '_') continue;
      }
      TSNode n = ts_node_descendant_for_byte_range(root, static_cast<uint32_t>(at), static_cast<uint32_t>(at + cls.size()));
      while (!ts_node_is_null(n) && ts_node_symbol(n) != S.call) n = parent_of(n);
      if (ts_node_is_null(n) || !text_of(field(n, S.f_function), src).ends_with(cls)) continue;
      TSNode shape = multi_dim_shape(n, S, src);
      if (ts_node_is_null(shape)) continue;
      std::string_view arg = text_of(shape, src);
      if (arg.size() > 80 || arg.find('\n') != std::string_view::npos) arg = "a tuple";
      why = cls + " is also built with a multi-dimensional shape, `" + std::string(arg) + "` (line " +
            std::to_string(ts_node_start_point(n).row + 1) + ")";
    }
    if (!why.empty()) mark(spans, "shape_tuple", why);
  }
}

// Marks the Linear and Conv layers with a bias in a file that loads published weights
// (`checkpoint_names`): dropping a parameter breaks loading those checkpoints strictly.
// Also marks a biased layer applied more than once in a function (`shared_module`): a
// bias that one BatchNorm cancels may matter where the layer's other output goes; and, in a
// file that trains on a dataset of 28x28 or 32x32 images (`toy_data`: MNIST, CIFAR, SVHN),
// every biased layer: its activations are small, so the bias's add costs little.
void add_layer_facts(const SourceFile& file, ir::Module& out) {
  int loads = -1;                // read the text only when a biased layer is there
  std::optional<std::string_view> toy;
  for (ir::Function& fn : out.functions) {
    std::map<std::string, int> applied;  // module path -> calls in this function
    for (const ir::Node& n : fn.nodes)
      if ((n.op == "conv" || n.op == "linear") && n.attr("module"))
        if (const auto* m = std::get_if<std::string>(n.attr("module"))) ++applied[*m];
    for (ir::Node& n : fn.nodes) {
      if (n.op != "conv" && n.op != "linear") continue;
      const ir::Attr* bias = n.attr("bias");
      if (!bias || !std::get_if<bool>(bias) || !std::get<bool>(*bias)) continue;
      if (loads < 0) loads = loads_weights(file.text);
      if (loads) n.attrs["checkpoint_names"] = true;
      if (!toy) toy = small_image_dataset(file.text);
      if (!toy->empty()) n.attrs["toy_data"] = std::string(*toy);
      const ir::Attr* m = n.attr("module");
      if (m && std::get_if<std::string>(m) && applied[std::get<std::string>(*m)] > 1) n.attrs["shared_module"] = true;
    }
  }
}

}  // namespace mlsem::python
