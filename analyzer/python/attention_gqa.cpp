// K/V head copies that never copy: a timm model file whose registered configurations
// never set a K/V head count below the head count (attention_fix.h).
#include <string>
#include <string_view>

#include "python/attention_fix.h"
#include "python/attention_syntax.h"

namespace mlsem::python {

using namespace attention;

// timm model files register their configurations: when none of them sets a K/V head
// count (only `num_kv_heads or num_heads` defaults), the K/V copies never copy.
void mark_ungrouped_kv_copies(const SourceFile& file, ir::Module& out) {
  std::string_view src_ = file.text;
  ir::Module& out_ = out;
  if (src_.find("@register_model") == std::string_view::npos) return;
  for (std::string_view key : {"kv_heads", "key_value_heads", "kv_groups", "n_kv"}) {
    for (size_t at = src_.find(key); at != std::string_view::npos; at = src_.find(key, at + 1)) {
      size_t i = at + key.size();
      while (i < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[i])) || src_[i] == '_')) ++i;
      while (i < src_.size() && (src_[i] == '\'' || src_[i] == '"' || src_[i] == ' ')) ++i;
      if (i >= src_.size() || (src_[i] != '=' && src_[i] != ':') || (i + 1 < src_.size() && src_[i + 1] == '=')) continue;
      ++i;
      while (i < src_.size() && src_[i] == ' ') ++i;
      if (i < src_.size() && std::isdigit(static_cast<unsigned char>(src_[i]))) return;  // a config sets it
    }
  }
  for (ir::Function& fn : out_.functions)
    for (ir::Node& n : fn.nodes) {
      if (!is_one_of(n.op, {"repeat_interleave", "repeat", "expand"}) || flag(n, "repeat_one")) continue;
      std::vector<const std::string*> counts{str_attr(n, "repeats")};
      for (ir::NodeId in : n.inputs)
        if (in < fn.nodes.size()) counts.push_back(str_attr(fn.nodes[in], "text"));
      for (const std::string* t : counts) {
        std::string l = t ? lower_ascii(*t) : std::string();
        if (l.find("kv") != std::string::npos || l.find("group") != std::string::npos) {
          n.attrs["repeat_one"] = true;
          n.attrs["repeat_one_why"] = std::string("no model configuration in this file sets fewer K/V heads than heads");
          break;
        }
      }
    }
}

}  // namespace mlsem::python
