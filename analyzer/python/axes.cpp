// Axis roles (axes.h). Shapes flow forward over the nodes in topological order; each op
// maps its inputs' axes to its output's. Sizes are never computed: an axis is an identity
// (kept through transposes, permutes, slices, elementwise ops) and a role (read from the
// spelling of a reshape's size arguments or an einops pattern, or given by the op: a
// Linear's output features, a matmul's contracted axis).
#include "python/axes.h"

#include "core/text.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string_view>

namespace mlsem::python {
namespace {

const std::string* str_attr(const ir::Node& n, const char* key) {
  const ir::Attr* a = n.attr(key);
  return a ? std::get_if<std::string>(a) : nullptr;
}
std::optional<int64_t> int_attr(const ir::Node& n, const char* key) {
  const ir::Attr* a = n.attr(key);
  if (!a || !std::holds_alternative<int64_t>(*a)) return std::nullopt;
  return std::get<int64_t>(*a);
}
bool callee_has(const ir::Node& n, std::string_view part) {
  const std::string* c = str_attr(n, "callee");
  return c && c->find(part) != std::string::npos;
}
std::string_view method_of(const ir::Node& n) {
  const std::string* c = str_attr(n, "callee");
  if (!c) return {};
  std::string_view s(*c);
  size_t dot = s.rfind('.');
  return dot == std::string_view::npos ? s : s.substr(dot + 1);
}

std::string lower(std::string_view s) {
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

// Splits "a, f(b, c), d" at top-level commas.
std::vector<std::string> split_top(std::string_view s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty() || !out.empty()) out.push_back(cur);
  for (auto& t : out) {
    size_t b = t.find_first_not_of(" \t\n"), e = t.find_last_not_of(" \t\n");
    t = b == std::string::npos ? "" : t.substr(b, e - b + 1);
  }
  return out;
}

bool any_word(std::string_view t, std::initializer_list<std::string_view> words) {
  return std::any_of(words.begin(), words.end(), [&](std::string_view w) { return t == w; });
}

AxisRole role_of_name(std::string_view n) {
  if (n.empty()) return AxisRole::kUnknown;
  if (any_word(n, {"b", "bs", "bsz", "nb", "n_batch", "batch", "batch_size", "bz"}) || contains(n, "batch") ||
      contains(n, "bsz"))
    return AxisRole::kBatch;
  if (any_word(n, {"n_rep", "rep", "r", "g", "groups", "num_key_value_groups", "n_groups", "num_groups", "kv_groups",
                   "num_kv_groups", "hc_mult"}))
    return AxisRole::kCopies;
  bool head = contains(n, "head") || any_word(n, {"h", "nh", "n_h", "heads"});
  if (head && (contains(n, "dim") || contains(n, "size") || contains(n, "channel") || contains(n, "hd")))
    return AxisRole::kFeatures;
  if (head) return AxisRole::kHeads;
  if (any_word(n, {"d", "dk", "d_k", "dv", "d_v", "dh", "hd", "c", "ch", "channels", "dim", "e", "f", "embed_dim",
                   "hidden", "hidden_size", "inner_dim", "embed", "features", "key_dim", "qk_dim", "v_dim",
                   "dim_head", "c_", "dim_per_head"}) ||
      contains(n, "dim") || contains(n, "channel") || contains(n, "hidden") || contains(n, "embed") ||
      (contains(n, "_size") && contains(n, "head")))
    return AxisRole::kFeatures;
  if (any_word(n, {"t", "n", "l", "s", "m", "i", "j", "k", "q", "x", "y", "w", "hw", "seq", "seqlen", "length", "tokens",
                   "num_tokens", "n_tokens", "kv", "tgt", "src", "np", "nw", "ws", "window"}) ||
      contains(n, "len") || contains(n, "seq") || contains(n, "token") || contains(n, "patch") ||
      contains(n, "pos") || contains(n, "window") || contains(n, "height") || contains(n, "width") ||
      contains(n, "num_queries") || contains(n, "query_num"))
    return AxisRole::kPositions;
  return AxisRole::kUnknown;
}

}  // namespace

AxisRole role_of_size(std::string_view text) {
  std::string t = lower(text);
  if (t.empty() || t == "-1" || t == "1") return AxisRole::kUnknown;
  if (contains(t, "//") || contains(t, "/")) {
    std::string num = t.substr(0, t.find('/'));
    std::string den = t.substr(t.rfind('/') + 1);
    AxisRole d = role_of_size(den);
    if (d == AxisRole::kHeads || contains(den, "head")) return AxisRole::kFeatures;  // C // num_heads
    if (d == AxisRole::kCopies) return AxisRole::kHeads;                            // heads // n_rep
    return role_of_size(num);
  }
  if (contains(t, "*")) {
    bool batch = false, heads = false, feat = false, pos = false;
    for (const auto& f : split_top([&] {
           std::string s = t;
           std::replace(s.begin(), s.end(), '*', ',');
           return s;
         }())) {
      AxisRole r = role_of_size(f);
      batch |= r == AxisRole::kBatch;
      heads |= r == AxisRole::kHeads || r == AxisRole::kCopies;
      feat |= r == AxisRole::kFeatures;
      pos |= r == AxisRole::kPositions;
    }
    if (batch) return AxisRole::kBatch;  // (b * h): heads folded into the batch
    if (feat) return AxisRole::kFeatures;  // heads * head_dim
    if (heads && !pos) return AxisRole::kHeads;
    return AxisRole::kPositions;  // h * w, window * window
  }
  // x.shape[1], x.size(2): unknown; config.num_attention_heads: by its last name.
  if (contains(t, "(") || contains(t, "[")) return AxisRole::kUnknown;
  std::string_view n(t);
  if (size_t dot = n.rfind('.'); dot != std::string_view::npos) n = n.substr(dot + 1);
  return role_of_name(n);
}

namespace {

class Inference {
 public:
  explicit Inference(const ir::Function& fn) : fn_(fn), shapes_(fn.nodes.size()) {}

  AxisFacts run() {
    contractions_.resize(fn_.nodes.size());
    for (ir::NodeId i = 0; i < fn_.nodes.size(); ++i) {
      shapes_[i] = infer(i);
      if (shapes_[i].axes.empty() && !shapes_[i].full) shapes_[i].known = false;  // nothing known after all
    }
    return AxisFacts{std::move(shapes_), std::move(contractions_)};
  }

 private:
  const ir::Function& fn_;
  std::vector<AxisShape> shapes_;
  std::vector<Contraction> contractions_;
  uint32_t next_id_ = 1;

  Axis fresh(AxisRole r = AxisRole::kUnknown, bool one = false) { return Axis{next_id_++, r, one}; }

  const AxisShape& in(ir::NodeId id, size_t k) const {
    static const AxisShape kNone;
    const ir::Node& n = fn_.nodes[id];
    if (k >= n.inputs.size() || n.inputs[k] >= id) return kNone;
    return shapes_[n.inputs[k]];
  }

  // Index into s.axes of dim d (negative from the end; non-negative needs the full rank).
  static std::optional<size_t> index(const AxisShape& s, int64_t d) {
    if (!s.known) return std::nullopt;
    int64_t n = static_cast<int64_t>(s.axes.size());
    if (d < 0) return d + n >= 0 ? std::optional<size_t>(d + n) : std::nullopt;
    if (!s.full || d >= n) return std::nullopt;
    return static_cast<size_t>(d);
  }

  static AxisShape trailing(std::vector<Axis> axes, bool full) { return AxisShape{std::move(axes), full, true}; }

  AxisShape from_sizes(const std::vector<std::string>& sizes) {
    AxisShape s;
    s.known = true;
    s.full = true;
    for (const auto& t : sizes) {
      if (!t.empty() && t[0] == '*') {  // *x.shape[:-1]: unknown leading axes
        s.axes.clear();
        s.full = false;
        continue;
      }
      s.axes.push_back(fresh(role_of_size(t), t == "1"));
    }
    return s;
  }

  AxisShape infer(ir::NodeId id) {
    const ir::Node& n = fn_.nodes[id];
    const std::string& op = n.op;
    static const std::vector<std::string> kSame = {
        "scale", "mask", "cast", "dropout", "clamp", "softmax", "log_softmax", "neg", "exp", "log", "tanh",
        "sigmoid", "gelu", "silu", "relu", "leaky_relu", "softplus", "mish", "hardswish", "sqrt", "rsqrt",
        "abs", "erf", "sin", "cos", "reciprocal", "pow", "layer_norm", "rms_norm", "group_norm", "batch_norm",
        "repeat", "repeat_interleave", "tril", "triu"};
    if (std::find(kSame.begin(), kSame.end(), op) != kSame.end()) return in(id, 0);
    if (op == "add" || op == "mul" || op == "sub" || op == "div") {
      const AxisShape* best = nullptr;
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const AxisShape& s = in(id, k);
        if (s.known && (!best || (s.full && !best->full) || s.axes.size() > best->axes.size())) best = &s;
      }
      return best ? *best : AxisShape{};
    }
    if (op == "linear") {
      AxisShape s = in(id, 0);
      if (!s.known || s.axes.empty()) return trailing({fresh(AxisRole::kFeatures)}, false);
      s.axes.back() = fresh(AxisRole::kFeatures);
      return s;
    }
    if (op == "embedding") {
      AxisShape s = in(id, 0);
      if (!s.known) return trailing({fresh(AxisRole::kFeatures)}, false);
      s.axes.push_back(fresh(AxisRole::kFeatures));
      return s;
    }
    if (op == "conv") {
      int spatial = callee_has(n, "1d") ? 1 : callee_has(n, "2d") ? 2 : callee_has(n, "3d") ? 3 : 0;
      if (spatial == 0) return {};
      std::vector<Axis> axes{fresh(AxisRole::kBatch), fresh(AxisRole::kFeatures)};
      for (int i = 0; i < spatial; ++i) axes.push_back(fresh(AxisRole::kPositions));
      return trailing(std::move(axes), true);
    }
    if (op == "transpose") return transpose(id);
    if (op == "permute") return permute(id);
    if (op == "reshape") return reshape(id);
    if (op == "expand") return expand(id);
    if (op == "slice") return slice(id);
    if (op == "split") return in(id, 0);
    if (op == "part") {
      if (n.inputs.empty() || n.inputs[0] >= id) return {};
      const ir::Node& src = fn_.nodes[n.inputs[0]];
      if (src.op != "split") return {};
      AxisShape s = shapes_[n.inputs[0]];
      const std::string* m = str_attr(src, "method");
      if (m && *m == "unbind") {
        auto d = int_attr(src, "dim");
        auto i = d ? index(s, *d) : std::nullopt;
        if (!i) return {};
        s.axes.erase(s.axes.begin() + static_cast<std::ptrdiff_t>(*i));
      }
      return s;
    }
    if (op == "cat") {  // the joined axis is a new one (x[:, :1] joined with the rest is not of size 1)
      AxisShape s = in(id, 0);
      auto d = int_attr(n, "dim");
      auto i = d ? index(s, *d) : std::nullopt;
      if (i) s.axes[*i] = fresh(s.axes[*i].role);
      else if (s.known) return {};
      return s;
    }
    if (op == "matmul") return matmul(id);
    if (op == "call" && (callee_has(n, "functional.normalize") || callee_has(n, ".contiguous")))
      return in(id, 0);  // F.normalize(q, dim=-1): same axes
    if (op == "sdpa") {
      AxisShape s = in(id, 0);
      if (s.known && !s.axes.empty()) s.axes.back() = fresh(AxisRole::kFeatures);
      return s;
    }
    return {};
  }

  AxisShape transpose(ir::NodeId id) {
    const ir::Node& n = fn_.nodes[id];
    AxisShape s = in(id, 0);
    auto d0 = int_attr(n, "dim0"), d1 = int_attr(n, "dim1");
    if (!d0 || !d1) return {};
    if (!s.known) {
      // Only the swapped axes are known when both count from the end.
      if (*d0 >= 0 || *d1 >= 0) return {};
      size_t m = static_cast<size_t>(-std::min(*d0, *d1));
      s = trailing(std::vector<Axis>(m), false);
    }
    auto i = index(s, *d0), j = index(s, *d1);
    if (!i || !j) return {};
    std::swap(s.axes[*i], s.axes[*j]);
    return s;
  }

  AxisShape permute(ir::NodeId id) {
    const ir::Node& n = fn_.nodes[id];
    const std::string* dims = str_attr(n, "dims");
    if (!dims) return {};
    std::string t = *dims;
    t.erase(std::remove_if(t.begin(), t.end(), [](char c) { return c == '(' || c == ')' || c == '[' || c == ']'; }),
            t.end());
    std::vector<int64_t> perm;
    for (const auto& p : split_top(t)) {
      char* end = nullptr;
      long v = std::strtol(p.c_str(), &end, 10);
      if (p.empty() || *end) return {};
      perm.push_back(v);
    }
    const AxisShape& s = in(id, 0);
    int64_t r = static_cast<int64_t>(perm.size());
    int64_t m = s.known ? static_cast<int64_t>(s.axes.size()) : 0;
    if (s.known && s.full && m != r) return {};
    AxisShape out = trailing({}, true);
    for (int64_t p : perm) {
      int64_t src = p < 0 ? p + r : p;
      int64_t at = src - (r - m);  // position within the known trailing axes
      out.axes.push_back(at >= 0 && at < m ? s.axes[at] : Axis{});
    }
    return out;
  }

  AxisShape reshape(ir::NodeId id) {
    const ir::Node& n = fn_.nodes[id];
    std::string_view method = method_of(n);
    AxisShape s = in(id, 0);
    if (const std::string* p = str_attr(n, "einops")) return einops(s, *p);
    if (method == "unsqueeze") {
      auto d = int_attr(n, "dim");
      if (!d || !s.known) return {};
      int64_t at = *d < 0 ? static_cast<int64_t>(s.axes.size()) + *d + 1 : *d;
      if (at < 0 || at > static_cast<int64_t>(s.axes.size()) || (*d >= 0 && !s.full)) return {};
      s.axes.insert(s.axes.begin() + at, fresh(AxisRole::kUnknown, true));
      return s;
    }
    if (method == "squeeze") {
      auto d = int_attr(n, "dim");
      auto i = d ? index(s, *d) : std::nullopt;
      if (!i) return {};
      s.axes.erase(s.axes.begin() + static_cast<std::ptrdiff_t>(*i));
      return s;
    }
    if (method == "flatten") {
      int64_t a = int_attr(n, "start").value_or(0), b = int_attr(n, "end").value_or(-1);
      auto i = index(s, a), j = index(s, b);
      if (!i || !j || *i > *j) return {};
      bool batch = false, heads = false, feat = false, pos = false, copies = false;
      for (size_t k = *i; k <= *j; ++k) {
        AxisRole r = s.axes[k].role;
        batch |= r == AxisRole::kBatch;
        heads |= r == AxisRole::kHeads;
        copies |= r == AxisRole::kCopies;
        feat |= r == AxisRole::kFeatures;
        pos |= r == AxisRole::kPositions;
      }
      AxisRole merged = batch ? AxisRole::kBatch : feat ? AxisRole::kFeatures : (heads || copies) ? AxisRole::kHeads
                        : pos ? AxisRole::kPositions : AxisRole::kUnknown;
      s.axes.erase(s.axes.begin() + static_cast<std::ptrdiff_t>(*i), s.axes.begin() + static_cast<std::ptrdiff_t>(*j) + 1);
      s.axes.insert(s.axes.begin() + static_cast<std::ptrdiff_t>(*i), fresh(merged));
      return s;
    }
    if (method == "unflatten") {
      auto d = int_attr(n, "dim");
      auto i = d ? index(s, *d) : std::nullopt;
      const std::string* sizes = str_attr(n, "shape");
      if (!i || !sizes) return {};
      std::string t = *sizes;
      if (!t.empty() && (t.front() == '(' || t.front() == '[')) t = t.substr(1, t.size() - 2);
      AxisShape parts = from_sizes(split_top(t));
      s.axes.erase(s.axes.begin() + static_cast<std::ptrdiff_t>(*i));
      s.axes.insert(s.axes.begin() + static_cast<std::ptrdiff_t>(*i), parts.axes.begin(), parts.axes.end());
      return s;
    }
    const std::string* shape = str_attr(n, "shape");
    if (!shape) return {};
    std::vector<std::string> sizes = split_top(*shape);
    AxisShape out = from_sizes(sizes);
    // Axes kept as they were: the same spelling at the same place from the end,
    // or -1 closing a shape that keeps the input's leading axes.
    if (s.known && out.known) {
      for (size_t k = 1; k <= std::min(out.axes.size(), s.axes.size()); ++k) {
        Axis& o = out.axes[out.axes.size() - k];
        const Axis& i = s.axes[s.axes.size() - k];
        if (o.role == AxisRole::kUnknown && !o.one && i.role != AxisRole::kUnknown &&
            sizes[sizes.size() - k] == "-1" && out.axes.size() == s.axes.size())
          o = i;
      }
    }
    return out;
  }

  AxisShape expand(ir::NodeId id) {
    const ir::Node& n = fn_.nodes[id];
    AxisShape s = in(id, 0);
    const std::string* shape = str_attr(n, "shape");
    if (!shape) return s;
    std::vector<std::string> sizes = split_top(*shape);
    AxisShape out = from_sizes(sizes);
    for (size_t k = 1; k <= out.axes.size(); ++k) {
      Axis& o = out.axes[out.axes.size() - k];
      const std::string& size = sizes[sizes.size() - k];
      bool have = s.known && k <= s.axes.size();
      const Axis* i = have ? &s.axes[s.axes.size() - k] : nullptr;
      if (size == "-1" && i) o = *i;
      else if (i && i->one) o = fresh(AxisRole::kCopies);  // a size-1 axis broadcast: the copies
      else if (i) o = *i;
    }
    return out;
  }

  // x[:, :1], x[..., 0, :], x[:, :, None]
  AxisShape slice(ir::NodeId id) {
    const ir::Node& n = fn_.nodes[id];
    const AxisShape& s = in(id, 0);
    const std::string* text = str_attr(n, "text");
    if (!s.known || !text || text->size() < 2 || text->front() != '[' || text->back() != ']') return {};
    std::vector<std::string> comps = split_top(std::string_view(*text).substr(1, text->size() - 2));
    auto ell = std::find(comps.begin(), comps.end(), "...");
    std::vector<std::string> pre(comps.begin(), ell), post;
    if (ell != comps.end()) post.assign(ell + 1, comps.end());
    auto consumes = [](const std::string& c) { return c != "None"; };
    auto apply = [&](const std::vector<std::string>& cs, const Axis* axes, std::vector<Axis>& out) {
      size_t k = 0;
      for (const auto& c : cs) {
        if (c == "None") {
          out.push_back(fresh(AxisRole::kUnknown, true));
        } else if (c.find(':') != std::string::npos) {
          Axis a = axes[k++];
          if (c == ":1" || c == "0:1" || c == "-1:") a.one = true;
          out.push_back(a);
        } else {
          ++k;  // an index drops the axis
        }
      }
    };
    size_t pre_n = std::count_if(pre.begin(), pre.end(), consumes);
    size_t post_n = std::count_if(post.begin(), post.end(), consumes);
    if (ell == comps.end()) {  // no ellipsis: the components index the leading axes
      bool all_keep = std::all_of(pre.begin(), pre.end(), [](const std::string& c) { return c == ":"; });
      if (!s.full && !all_keep) return {};
      if (pre_n > s.axes.size()) return {};
      AxisShape out = trailing({}, s.full);
      apply(pre, s.axes.data(), out.axes);
      out.axes.insert(out.axes.end(), s.axes.begin() + static_cast<std::ptrdiff_t>(pre_n), s.axes.end());
      return out;
    }
    if (pre_n + post_n > s.axes.size() || (!s.full && pre_n > 0)) return {};
    AxisShape out = trailing({}, s.full);
    if (s.full) apply(pre, s.axes.data(), out.axes);
    out.axes.insert(out.axes.end(), s.axes.begin() + static_cast<std::ptrdiff_t>(pre_n),
                    s.axes.end() - static_cast<std::ptrdiff_t>(post_n));
    apply(post, s.axes.data() + (s.axes.size() - post_n), out.axes);
    return out;
  }

  // "b n (h d) -> b h n d": roles from the names; the output side's groups are merged axes.
  AxisShape einops(const AxisShape& s, const std::string& pattern) {
    size_t arrow = pattern.find("->");
    if (arrow == std::string::npos) return {};
    std::string_view lhs = std::string_view(pattern).substr(0, arrow);
    std::string_view rhs = std::string_view(pattern).substr(arrow + 2);
    bool image = contains(lhs, " w") || contains(lhs, "(h w)") || contains(rhs, "(h w)");
    auto role = [&](std::string_view name) {
      if (image && (name == "h" || name == "w")) return AxisRole::kPositions;
      return role_of_name(name);
    };
    AxisShape out = trailing({}, true);
    std::vector<std::string_view> group;
    bool in_group = false;
    auto flush = [&](std::vector<std::string_view> names) {
      bool batch = false, heads = false, feat = false, pos = false, copies = false, one = names.size() == 1 && names[0] == "1";
      for (auto nm : names) {
        AxisRole r = role(nm);
        batch |= r == AxisRole::kBatch;
        heads |= r == AxisRole::kHeads;
        copies |= r == AxisRole::kCopies;
        feat |= r == AxisRole::kFeatures;
        pos |= r == AxisRole::kPositions;
      }
      AxisRole merged = batch ? AxisRole::kBatch : feat ? AxisRole::kFeatures : heads ? AxisRole::kHeads
                        : copies ? AxisRole::kCopies : pos ? AxisRole::kPositions : AxisRole::kUnknown;
      out.axes.push_back(fresh(merged, one || (names.size() == 1 && names[0] == "()")));
    };
    size_t i = 0;
    while (i < rhs.size()) {
      char c = rhs[i];
      if (c == '(') {
        in_group = true;
        group.clear();
        if (i + 1 < rhs.size() && rhs[i + 1] == ')') {
          flush({"()"});
          in_group = false;
          i += 2;
          continue;
        }
        ++i;
      } else if (c == ')') {
        in_group = false;
        flush(group);
        ++i;
      } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
        size_t j = i;
        while (j < rhs.size() && (std::isalnum(static_cast<unsigned char>(rhs[j])) || rhs[j] == '_')) ++j;
        std::string_view name = rhs.substr(i, j - i);
        if (in_group) group.push_back(name);
        else flush({name});
        i = j;
      } else if (c == '.') {
        out.axes.clear();  // "..." : unknown leading axes
        out.full = false;
        i += 3;
      } else {
        ++i;
      }
    }
    (void)s;
    return out;
  }

  AxisShape matmul(ir::NodeId id) {
    const ir::Node& n = fn_.nodes[id];
    Contraction& c = contractions_[id];
    const AxisShape& a = in(id, 0);
    const AxisShape& b = in(id, 1);
    if (const std::string* subs = str_attr(n, "subscripts")) return einsum(*subs, a, b, c);
    AxisShape out;
    Axis row = a.known && a.axes.size() >= 2 ? a.axes[a.axes.size() - 2] : fresh();
    Axis col = b.known && !b.axes.empty() ? b.axes.back() : fresh();
    if (a.known && !a.axes.empty()) c.a = a.axes.back();
    if (b.known && b.axes.size() >= 2) c.b = b.axes[b.axes.size() - 2];
    c.clean = true;
    if (row.id == 0) row = fresh(row.role, row.one);
    if (col.id == 0) col = fresh(col.role, col.one);
    c.free_a.push_back(row.id);
    c.free_b.push_back(col.id);
    const AxisShape& lead = a.known && a.axes.size() >= b.axes.size() ? a : b;
    out.known = true;
    out.full = a.full && b.full;
    if (lead.known && lead.axes.size() > 2) out.axes.assign(lead.axes.begin(), lead.axes.end() - 2);
    if (!lead.known || lead.axes.size() < 2) out.full = false;
    out.axes.push_back(row);
    out.axes.push_back(col);
    return out;
  }

  AxisShape einsum(const std::string& subs, const AxisShape& a, const AxisShape& b, Contraction& c) {
    size_t arrow = subs.find("->"), comma = subs.find(',');
    if (arrow == std::string::npos || comma == std::string::npos || comma > arrow) return {};
    std::string la = subs.substr(0, comma), lb = subs.substr(comma + 1, arrow - comma - 1), lo = subs.substr(arrow + 2);
    auto strip = [](std::string& s, bool& ell) {
      ell = s.find("...") != std::string::npos;
      s.erase(std::remove(s.begin(), s.end(), '.'), s.end());
    };
    bool ea = false, eb = false, eo = false;
    strip(la, ea);
    strip(lb, eb);
    strip(lo, eo);
    // The axis each letter names, from the end of each operand.
    auto axis_of = [&](const std::string& letters, const AxisShape& s, char ch) -> Axis {
      size_t pos = letters.find(ch);
      if (pos == std::string::npos || !s.known) return Axis{};
      size_t from_end = letters.size() - pos;
      if (from_end > s.axes.size()) return Axis{};
      return s.axes[s.axes.size() - from_end];
    };
    int contracted = 0;
    AxisShape out = trailing({}, !eo && (a.full || b.full));
    for (char ch : la)
      if (lb.find(ch) != std::string::npos && lo.find(ch) == std::string::npos) {
        ++contracted;
        c.a = axis_of(la, a, ch);
        c.b = axis_of(lb, b, ch);
      }
    c.clean = contracted == 1;
    for (char ch : lo) {
      bool in_a = la.find(ch) != std::string::npos, in_b = lb.find(ch) != std::string::npos;
      Axis x = in_a ? axis_of(la, a, ch) : axis_of(lb, b, ch);
      // Einsum letters are not roles ('k' is a key position in one spec, a feature in another).
      if (x.id == 0) x = fresh(x.role, x.one);
      if (in_a && !in_b) c.free_a.push_back(x.id);
      if (in_b && !in_a) c.free_b.push_back(x.id);
      out.axes.push_back(x);
    }
    return out;
  }
};

const char* role_letter(const Axis& a) {
  if (a.one) return "1";
  switch (a.role) {
    case AxisRole::kBatch: return "b";
    case AxisRole::kHeads: return "h";
    case AxisRole::kPositions: return "t";
    case AxisRole::kFeatures: return "d";
    case AxisRole::kCopies: return "r";
    case AxisRole::kUnknown: return "?";
  }
  return "?";
}

}  // namespace

std::string axes_text(const AxisShape& s) {
  if (!s.known) return "";
  std::string out = s.full ? "" : "\u2026";
  for (const Axis& a : s.axes) {
    if (!out.empty()) out += ' ';
    out += role_letter(a);
  }
  return out;
}

AxisFacts infer_axes(const ir::Function& fn) { return Inference(fn).run(); }

}  // namespace mlsem::python
