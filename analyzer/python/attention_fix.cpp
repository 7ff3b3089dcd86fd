// The arguments of F.scaled_dot_product_attention for each hand-written attention, or why
// SDPA would not compute the same numbers (attention_fix.h). Operands and added terms are
// read from the syntax at the products and at each step, so they name the values the code
// really uses there (a mask re-assigned before it is added, `qkv[0]` rather than `[0]`).
#include "python/attention_fix.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "python/attention_syntax.h"
#include "python/attention_trace.h"
#include "python/syntax.h"

namespace mlsem::python {
namespace {

using namespace attention;

constexpr size_t kTraceSteps = 16;

struct Term {
  std::string text;
  bool conditional = false;  // added under `if <term> is not None:`
  bool bias = false;         // not the attention mask: a position or learned bias
};

class FixPass : private AttentionSyntax {
 public:
  FixPass(const SourceFile& file, TSNode root, ir::Module& out) : AttentionSyntax(file, root), out_(out) {}

  void run() {
    for (ir::Function& fn : out_.functions) function(fn);
  }

 private:
  ir::Module& out_;

  // Does `id` come from another product of data a few steps back (a second score matrix)?
  bool from_product(const ir::Function& fn, ir::NodeId id) const {
    std::vector<ir::NodeId> todo{id};
    for (size_t seen = 0; !todo.empty() && seen < 12; ++seen) {
      ir::NodeId n = todo.back();
      todo.pop_back();
      if (n >= fn.nodes.size()) continue;
      const ir::Node& x = fn.nodes[n];
      if (x.op == "matmul") return true;
      if (!is_one_of(x.op, {"scale", "reshape", "transpose", "permute", "cast", "add"})) continue;
      for (ir::NodeId in : x.inputs) todo.push_back(in);
    }
    return false;
  }

  // A scale on a value before the scores: `q = q * self.scale` (through layout steps).
  ir::NodeId prescale(const ir::Function& fn, ir::NodeId id) const {
    for (size_t steps = 0; steps < kTraceSteps && id < fn.nodes.size(); ++steps) {
      const ir::Node& x = fn.nodes[id];
      if (x.op == "scale") return id;
      if (!is_one_of(x.op, {"reshape", "transpose", "permute", "part", "cast", "slice", "contiguous"}) || x.inputs.empty())
        return ir::kNoNode;
      id = x.inputs[0];
    }
    return ir::kNoNode;
  }

  // Whether `id` is a cast to float32, through layout steps (`q.to(torch.float32)`,
  // `k.float().transpose(-1, -2)`).
  bool upcast(const ir::Function& fn, ir::NodeId id) const {
    for (size_t steps = 0; steps < kTraceSteps && id < fn.nodes.size(); ++steps) {
      const ir::Node& x = fn.nodes[id];
      if (x.op == "cast") {
        const std::string* d = str_attr(x, "dtype");
        return d && *d == "float32";
      }
      if (!is_one_of(x.op, {"reshape", "transpose", "permute", "contiguous"}) || x.inputs.empty()) return false;
      id = x.inputs[0];
    }
    return false;
  }

  // Whether a subscript in `t` slices from somewhere other than the start: `m[pos:pos + q, :k]`,
  // `m[:, -n:]`, `bias[:, :, k_len - q_len : k_len, :k_len]` (not `m[:T, :T]`, `m[0:T]`).
  static bool offset_slice(std::string_view t) {
    for (size_t open = t.find('['); open != std::string_view::npos; open = t.find('[', open + 1)) {
      size_t begin = open + 1;
      int depth = 0;
      for (size_t i = begin; i < t.size(); ++i) {
        char c = t[i];
        if (c == '[' || c == '(' || c == '{') ++depth;
        else if ((c == ']' || c == ')' || c == '}') && depth > 0) --depth;
        else if (depth == 0 && (c == ',' || c == ']')) {
          std::string_view part = t.substr(begin, i - begin);
          if (size_t colon = part.find(':'); colon != std::string_view::npos) {
            std::string_view start = trim(part.substr(0, colon));
            if (!start.empty() && start != "0" && start != "None") return true;
          }
          if (c == ']') break;
          begin = i + 1;
        }
      }
    }
    return false;
  }

  // Whether the causal mask applied at `step` is offset for cached keys: its expression, or
  // an assignment in the function to a name it uses, slices the mask from a position other
  // than the start (a decode step's queries are the last rows). is_causal=True aligns the
  // triangle top-left when there are fewer queries than keys, so the mask must go in
  // attn_mask as written.
  bool offset_causal(const ir::Function& fn, const ir::Node& step) const {
    TSNode at = exact(step.range);
    if (ts_node_is_null(at)) return false;
    std::string_view expr = text(at);
    if (offset_slice(expr)) return true;
    TSNode def = exact(fn.range);
    if (ts_node_is_null(def)) return false;
    std::vector<TSNode> todo{def};
    while (!todo.empty()) {
      TSNode n = todo.back();
      todo.pop_back();
      if (ts_node_symbol(n) == S.assignment) {
        TSNode left = ts_node_child_by_field_id(n, S.f_left), right = ts_node_child_by_field_id(n, S.f_right);
        if (!ts_node_is_null(left) && !ts_node_is_null(right) && ts_node_symbol(left) == S.identifier &&
            ts_node_start_byte(n) < step.range.begin_byte && !word_offsets(expr, text(left)).empty() &&
            offset_slice(text(right)))
          return true;
        continue;
      }
      for (uint32_t i = 0, c = ts_node_named_child_count(n); i < c; ++i) todo.push_back(ts_node_named_child(n, i));
    }
    return false;
  }

  std::string approximation(const ir::Function& fn) const {
    std::string name = lower_ascii(fn.name);
    if (name.find("nystrom") != std::string::npos || name.find("landmark") != std::string::npos)
      return "a piece of a Nystrom approximation (landmarks and a pseudo-inverse), not exact T×T attention: SDPA "
             "computes something else";
    if (name.find("sparse") != std::string::npos)
      return "a piece of a sparse attention scheme (block-sparse or ProbSparse: some query or key blocks only), not "
             "plain T×T attention: SDPA computes something else";
    return {};
  }

  void function(ir::Function& fn) {
    if (std::none_of(fn.nodes.begin(), fn.nodes.end(), [](const ir::Node& n) { return n.op == "softmax"; })) return;
    std::vector<std::vector<ir::NodeId>> users = users_of(fn);
    for (ir::NodeId p = 0; p < fn.nodes.size(); ++p) {
      if (fn.nodes[p].op != "softmax") continue;
      std::vector<ir::NodeId> score_path;  // from the scores up to the softmax, both excluded
      ir::NodeId s = scores_of_softmax(fn, p, kTraceSteps, score_path);
      if (s == ir::kNoNode) continue;
      // Up to the products with the probabilities.
      std::map<ir::NodeId, ir::NodeId> up{{p, p}};
      std::vector<ir::NodeId> front{p};
      for (size_t steps = 0; !front.empty() && steps < kTraceSteps; ++steps) {
        ir::NodeId id = front.front();
        front.erase(front.begin());
        for (ir::NodeId u : users[id]) {
          const ir::Node& n = fn.nodes[u];
          if (up.count(u)) continue;
          if (n.op == "matmul") {
            up[u] = id;
            const ir::Attr* att = n.attr("attention");
            const bool* is = att ? std::get_if<bool>(att) : nullptr;
            if (is && !*is) continue;
            std::vector<ir::NodeId> prob_path;  // from the softmax (included) to the product (excluded)
            for (ir::NodeId x = id; x != p; x = up[x]) prob_path.push_back(x);
            prob_path.push_back(p);
            annotate(fn, users, p, s, u, score_path, prob_path);
          } else if (is_one_of(n.op, {"dropout", "cast", "reshape", "mask", "transpose", "permute"})) {
            up[u] = id;
            front.push_back(u);
          }
        }
      }
    }
  }

  // The loop around `step` that is not around the scores product, if any.
  static bool in_own_loop(const ir::Function& fn, const ir::Node& step, const ir::Node& scores) {
    auto loops = [&](uint32_t r) {
      std::set<uint32_t> out;
      for (int guard = 0; guard < 32 && r < fn.regions.size(); ++guard) {
        if (fn.regions[r].kind == "loop") out.insert(r);
        if (r == 0) break;
        r = fn.regions[r].parent;
      }
      return out;
    };
    std::set<uint32_t> a = loops(step.region), b = loops(scores.region);
    return std::any_of(a.begin(), a.end(), [&](uint32_t r) { return !b.count(r); });
  }

  // The condition of the innermost `if` branch around `step` that is not a None test.
  static std::string guard_of(const ir::Function& fn, const ir::Node& step, const ir::Node& scores) {
    uint32_t r = step.region;
    for (int guard = 0; guard < 16 && r < fn.regions.size() && r != scores.region; ++guard) {
      const std::string* cond = str_attr_map(fn.regions[r].attrs, "condition");
      if (cond && cond->find("None") == std::string::npos && cond->size() <= 60) return *cond;
      if (r == 0) break;
      r = fn.regions[r].parent;
    }
    return {};
  }

  void annotate(ir::Function& fn, const std::vector<std::vector<ir::NodeId>>& users, ir::NodeId p, ir::NodeId s,
                ir::NodeId o, const std::vector<ir::NodeId>& score_path, const std::vector<ir::NodeId>& prob_path) {
    std::string variant = approximation(fn);
    auto why_not = [&](std::string why) {
      if (variant.empty()) variant = std::move(why);
    };
    std::vector<std::string> notes;

    // Steps between the scores and the softmax.
    std::vector<ir::NodeId> scales;
    std::vector<Term> terms;
    std::vector<std::string> attend;  // boolean masks, True where a key is attended
    std::vector<std::string> masked;  // the same, True where a key is masked
    bool causal = false, reshaped = false, optional_masks = false;
    std::vector<std::string> unspelled;  // lines of terms and masks too long or split to write in the fix
    ir::NodeId below = s;
    for (ir::NodeId id : score_path) {
      const ir::Node& n = fn.nodes[id];
      ir::NodeId prev = below;
      below = id;
      if (n.op == "scale") {
        // A bias added before the scale is scaled with the scores (a 0/-inf mask is not
        // changed by it, in effect).
        if (std::any_of(terms.begin(), terms.end(), [](const Term& t) { return t.bias; }))
          why_not("the scores are scaled after a bias is added to them (line " + line(n.range) +
                  "): attn_mask would have to be scaled too");
        scales.push_back(id);
      } else if (n.op == "cast") {
      } else if (is_one_of(n.op, {"reshape", "permute", "transpose"})) {
        reshaped = true;
      } else if (n.op == "clamp") {
        why_not("the scores are clamped before the softmax (line " + line(n.range) + "); SDPA does not clamp");
      } else if (n.op == "sub") {
        why_not("a term is subtracted from the scores (line " + line(n.range) +
                ", a `w * b - 1e4 * (1 - b)` style mask): pass it as a float attn_mask (or is_causal=True when it is "
                "the causal mask) by hand");
      } else if (n.op == "mul" || n.op == "div") {
        why_not("the scores are multiplied or divided by a tensor (line " + line(n.range) +
                ": a learned per-head logit scale or a multiplicative mask); SDPA takes one scalar scale: fold it into "
                "q (q * s with scale=1.0) or into a float attn_mask by hand");
      } else if (n.op == "mask" || n.op == "add") {
        if (in_own_loop(fn, n, fn.nodes[s]))
          why_not("a term is added to the scores in a loop (line " + line(n.range) +
                  "): attn_mask would be the sum of every term");
        if (std::string g = guard_of(fn, n, fn.nodes[s]); !g.empty())
          notes.push_back("a term added only when " + g + " (line " + line(n.range) + ")");
      }
      if (n.op == "mask") {
        const std::string* kind = str_attr(n, "kind");
        bool offset = flag(n, "causal") && offset_causal(fn, n);
        if (offset)
          notes.push_back("the causal mask of line " + line(n.range) +
                          " is sliced for cached keys (fewer queries than keys): pass it as attn_mask, since "
                          "is_causal=True aligns the triangle top-left");
        if (kind && *kind == "additive") {
          if (flag(n, "causal") && !offset) {
            causal = true;
            continue;
          }
          Term t;
          TSNode tn = added_term(fn, id, prev);
          if (ts_node_is_null(tn) || !writable(text(tn), kMaxTerm)) unspelled.push_back(line(n.range));
          else t.text = std::string(text(tn));
          t.conditional = conditional(fn, n, t.text);
          terms.push_back(t);
        } else {
          if (flag(n, "causal") && !offset) {
            causal = true;
            continue;
          }
          // masked_fill(cond, -inf) or where(cond, scores, -inf).
          TSNode call = unparen(exact(n.range));
          if (ts_node_is_null(call) || ts_node_symbol(call) != S.call) {
            unspelled.push_back(line(n.range));
            continue;
          }
          TSNode object{};
          std::string_view name = callee(call, &object);
          std::vector<TSNode> as = args(call);
          bool method = !ts_node_is_null(object) && !is_ident(text(object)) ? true : as.size() < 3;
          TSNode cond{};
          if (name == "where" && as.size() == 3) cond = as[0];
          else if (name == "masked_fill" || name == "masked_fill_") cond = method && as.size() == 2 ? as[0] : as.size() == 3 ? as[1] : TSNode{};
          if (ts_node_is_null(cond) || !writable(text(cond), kMaxTerm)) {
            unspelled.push_back(line(n.range));
            continue;
          }
          if (const ir::Attr* v = n.attr("value"); v && std::holds_alternative<double>(*v) && std::get<double>(*v) > -1e4) {
            why_not("masked positions are filled with " + std::to_string(static_cast<long long>(std::get<double>(*v))) +
                    " (line " + line(n.range) + "), not -inf: a boolean attn_mask would change the results");
            continue;
          }
          std::string c(text(cond));
          TSNode cu = unparen(cond);
          std::string negated;
          if (ts_node_symbol(cu) == S.comparison_operator && ts_node_child_count(cu) == 3) {
            std::string_view op = text(ts_node_child(cu, 1));
            std::string l(text(ts_node_child(cu, 0))), r(text(ts_node_child(cu, 2)));
            if (op == "==") negated = l + " != " + r;
            else if (op == "!=") negated = l + " == " + r;
          }
          if (negated.empty()) negated = ts_node_symbol(cu) == S.identifier ? "~" + c : "~(" + c + ")";
          if (conditional(fn, n, c)) optional_masks = true;
          if (name == "where") attend.push_back(c), masked.push_back(negated);
          else attend.push_back(negated), masked.push_back(c);
        }
      } else if (n.op == "add") {
        Term t;
        t.bias = true;
        ir::NodeId other = ir::kNoNode;
        for (ir::NodeId in : n.inputs)
          if (in != prev) other = in;
        if (other != ir::kNoNode && from_product(fn, other)) {
          why_not("a second score matrix (another product, line " + line(fn.nodes[other].range) +
                  ") is added to the scores: SDPA would take it only as a materialized float attn_mask");
          continue;
        }
        TSNode tn = added_term(fn, id, prev);
        if (ts_node_is_null(tn) || !writable(text(tn), kMaxTerm)) unspelled.push_back(line(n.range));
        else t.text = std::string(text(tn));
        t.conditional = conditional(fn, n, t.text);
        terms.push_back(t);
      }
    }
    // Scores made in one branch of an `if` and used after it: the other branch makes
    // them some other way (LUKE's entity-aware score blocks), which the fix would drop.
    {
      const ir::Node& sx = fn.nodes[s];
      uint32_t r = fn.nodes[p].region, target = sx.region;
      bool ancestor = false;
      for (int guard = 0; guard < 32 && r < fn.regions.size(); ++guard) {
        if (r == target) ancestor = true;
        if (r == 0 || ancestor) break;
        r = fn.regions[r].parent;
      }
      // A branch that also holds the steps up to the softmax (`if a: s = (q @ k + b) * c
      // else: s = q @ k * c + b`) makes all of its scores: that branch is a fix of its own.
      auto within = [&](uint32_t reg) {
        for (int guard = 0; guard < 32 && reg < fn.regions.size(); ++guard) {
          if (reg == target) return true;
          if (reg == 0) break;
          reg = fn.regions[reg].parent;
        }
        return false;
      };
      bool steps_outside = score_path.empty() ||
                           std::any_of(score_path.begin(), score_path.end(), [&](ir::NodeId x) { return !within(fn.nodes[x].region); });
      if (!ancestor && steps_outside && target < fn.regions.size() && fn.regions[target].kind == "branch")
        why_not("the scores are computed in one branch of an `if` (line " + line(sx) +
                ") and the other branch computes them another way: the fix would cover one of them");
    }
    if (reshaped && (!terms.empty() || !attend.empty()))
      why_not("a mask or bias is added to the scores in another view (they are reshaped between the product and the "
              "softmax: window masks, 3-D bmm scores viewed as 4-D): q, k, v and the mask would need one layout");

    // Other uses of the scores and the probabilities: SDPA returns neither.
    std::set<ir::NodeId> chain(score_path.begin(), score_path.end());
    chain.insert(prob_path.begin(), prob_path.end());
    chain.insert(s);
    chain.insert(o);
    for (ir::NodeId x : chain) {
      if (x == o) continue;
      // Through slices and layout changes (`a[..., None] * pts`), a few steps.
      std::vector<ir::NodeId> reach;
      std::vector<std::pair<ir::NodeId, int>> walk{{x, 0}};
      while (!walk.empty()) {
        auto [y, depth] = walk.back();
        walk.pop_back();
        for (ir::NodeId u : users[y]) {
          if (chain.count(u)) continue;
          reach.push_back(u);
          if (depth < 3 && is_one_of(fn.nodes[u].op, {"slice", "reshape", "transpose", "permute", "cast", "unsqueeze",
                                                      "expand", "part", "contiguous", "index"}))
            walk.emplace_back(u, depth + 1);
        }
      }
      bool probs_here = std::find(prob_path.begin(), prob_path.end(), x) != prob_path.end();
      for (ir::NodeId u : reach) {
        const ir::Node& un = fn.nodes[u];
        const std::string* c = str_attr(un, "callee");
        // The probabilities handed to other code (`past_key_value.update_slimming(attn_weights,
        // ...)`, H2O's cache eviction): it needs them, SDPA does not return them. Not a print,
        // a logger, nor a map saved or hooked for visualization (`if register_hook:
        // self.save_attention_map(attn)`, BLIP's Grad-CAM switch): that path is opt-in.
        // Only a call written as one (a tuple or dict the function returns them in is the
        // returns-weights context's).
        TSNode call = probs_here && un.op == "call" ? unparen(exact(un.range)) : TSNode{};
        if (!ts_node_is_null(call) && ts_node_symbol(call) == S.call) {
          std::string shown(text(field(call, S.f_function)));
          std::string callee = lower_ascii(shown);
          bool aside = false;
          for (const char* w : {"log", "checkpoint", "drop", "save", "store", "record", "hook", "visual", "map"})
            aside = aside || contains(callee, w);
          if (callee != "print" && callee != "tuple" && callee != "list" && callee != "dict" && callee != "len" && !aside) {
            why_not("the probabilities are also passed to `" + shown + "` (line " + line(un.range) +
                    "); SDPA does not return them");
            continue;
          }
        }
        bool lse = c && c->find("logsumexp") != std::string::npos;
        if (!lse && !is_one_of(un.op, {"matmul", "add", "sub", "mul", "div", "scale", "sum", "mean", "max", "min",
                                       "exp", "log", "mask"}))
          continue;
        bool probs = std::find(prob_path.begin(), prob_path.end(), x) != prob_path.end();
        why_not(std::string(probs ? "the probabilities" : "the scores") + " are also used " +
                (lse ? "for a logsumexp (attention sinks)" : "by another computation") + " (line " +
                line(un.range) + "); SDPA returns neither");
      }
    }
    for (ir::NodeId x : prob_path)
      if (fn.nodes[x].op == "mask")
        why_not("the probabilities are masked after the softmax (line " + line(fn.nodes[x].range) + "); SDPA cannot");

    // The operands, as written at the two products.
    const ir::Node& sn = fn.nodes[s];
    const ir::Node& on = fn.nodes[o];
    Operands so = product_operands(exact(sn.range));
    Operands oo = product_operands(exact(on.range));
    std::string q, k, v;
    bool layout_note = false;
    ir::NodeId q_scale = ir::kNoNode;  // `(q * scale) @ kᵀ`: the scale written on q
    bool channel_first = on.inputs.size() == 2 && on.inputs[0] != prob_path.front();
    auto einsum = [&](const ir::Node& n) {
      const std::string* c = str_attr(n, "callee");
      return c && c->find("einsum") != std::string::npos;
    };
    bool se = einsum(sn) || !so.subscripts.empty(), oe = einsum(on) || !oo.subscripts.empty();
    // Einsums written as plain batched products ("bsij,bsjk->bsik") read like matmul.
    if (se && oe && matmul_form(so.subscripts) && matmul_form(oo.subscripts)) se = oe = false;
    if (channel_first || se != oe || (se && (so.subscripts.empty() || oo.subscripts.empty()))) {
      layout_note = true;
    } else if (se) {
      int form = so.ok && oo.ok ? standard_einsums(so.subscripts, oo.subscripts) : 0;
      if (form && writable(text(so.a)) && writable(text(so.b)) && writable(text(oo.b))) {
        q = text(so.a), k = text(so.b), v = text(oo.b);
        if (form == 2)
          notes.push_back("the output comes back as (..., length, head_dim), not in this einsum's order (" +
                          oo.subscripts.substr(oo.subscripts.find("->") + 2) + ")");
      } else {
        layout_note = true;
      }
    } else if (so.ok && oo.ok) {
      TSNode qa = unparen(so.a);
      if (!sn.inputs.empty() && fn.nodes[sn.inputs[0]].op == "scale" && ts_node_symbol(qa) == S.binary_operator &&
          fn.nodes[sn.inputs[0]].range.begin_byte == ts_node_start_byte(qa) &&
          fn.nodes[sn.inputs[0]].range.end_byte == ts_node_end_byte(qa)) {
        // The scale written on q in the product: q is its tensor operand.
        const ir::Node& sc = fn.nodes[sn.inputs[0]];
        TSNode l = field(qa, S.f_left), r = field(qa, S.f_right);
        const ir::Node& factor = fn.nodes[sc.inputs.size() > 1 ? sc.inputs[1] : sn.inputs[0]];
        TSNode tensor = inside(factor.range, r) ? l : inside(factor.range, l) ? r : TSNode{};
        if (!ts_node_is_null(tensor)) {
          q_scale = sn.inputs[0];
          qa = tensor;
        }
      }
      if (writable(text(qa)) && (ts_node_symbol(qa) != S.binary_operator || q_scale != ir::kNoNode))
        q = text(unparen(qa));
      TSNode kx = untransposed(so.b, so.batched);
      if (!ts_node_is_null(kx)) k = text(kx);
      else if (writable(text(so.b))) k = paren(text(so.b)) + ".transpose(-2, -1)";
      if (writable(text(oo.b))) v = text(oo.b);
    }
    // Products lowered from a helper (a MatMul wrapper module) around steps written here:
    // the helper's parameter names mean nothing where the fix goes.
    auto own = [&](const ir::Node& x) { return !fn.range.valid() || (x.range.begin_byte >= fn.range.begin_byte && x.range.end_byte <= fn.range.end_byte); };
    bool any_own = own(sn) || own(on) || std::any_of(score_path.begin(), score_path.end(), [&](ir::NodeId x) { return own(fn.nodes[x]); });
    if (any_own && (!own(sn) || !own(on))) q.clear(), k.clear(), v.clear();
    std::vector<std::string> placeholders;
    auto fill = [&](std::string& x, const char* name) {
      if (x.empty() || x.size() > kMaxOperand + 20) {
        x = name;
        placeholders.push_back(name);
      }
    };
    fill(q, "q");
    fill(k, "k");
    fill(v, "v");
    if (layout_note)
      notes.push_back("q, k, v: the operands of lines " + line(sn) + " and " + line(on) +
                      " laid out as (batch, heads, length, head_dim); the output comes back in that layout" +
                      (channel_first ? ", not channels first" : ""));
    else if (!placeholders.empty())
      notes.push_back("q, k, v: the operands of lines " + line(sn) + " and " + line(on) +
                      " laid out as (batch, heads, length, head_dim)");

    // The scale: SDPA's default is 1/sqrt(head_dim); scores not scaled need scale=1.0.
    std::string scale;
    if (q_scale != ir::kNoNode) scales.insert(scales.begin(), q_scale);
    // SDPA's default is left only to a factor that spells the head dim (`math.sqrt(self.
    // head_dim)`, `k.size(-1) ** -0.5`); a variable or an attribute (`scaling`, which T5
    // sets to 1.0; `self.scale = embed_dim ** -0.5` in CvT) is passed as written.
    auto head_dim_spelled = [](const std::string& f) {
      std::string l = lower_ascii(f);
      return !is_ident(f) && (l.find("head") != std::string::npos || l.find("size(-1)") != std::string::npos ||
                              l.find("shape[-1]") != std::string::npos);
    };
    if (scales.size() == 1 && flag(fn.nodes[scales[0]], "sqrt_like") &&
        head_dim_spelled(factor_text(fn, fn.nodes[scales[0]]))) {
      scale.clear();
    } else if (scales.empty()) {
      scale = "1.0";
    } else {
      for (ir::NodeId id : scales) {
        std::string f = factor_text(fn, fn.nodes[id]);
        if (f.empty()) {
          why_not("the scores are scaled by a factor mlsem cannot write as scale= (line " + line(fn.nodes[id].range) + ")");
          break;
        }
        std::string part = flag(fn.nodes[id], "divide") ? "1 / " + paren(f) : f;
        scale += (scale.empty() ? "" : " * ") + (scales.size() > 1 ? paren(part) : part);
      }
    }
    for (ir::NodeId x : {sn.inputs.empty() ? ir::kNoNode : sn.inputs[0], sn.inputs.size() > 1 ? sn.inputs[1] : ir::kNoNode}) {
      if (x == ir::kNoNode || x == q_scale) continue;
      ir::NodeId pre = prescale(fn, x);
      if (pre == ir::kNoNode) continue;
      std::string f = factor_text(fn, fn.nodes[pre]);
      if (!f.empty() && flag(fn.nodes[pre], "divide")) f = "1 / " + paren(f);
      notes.push_back(std::string(x == sn.inputs[0] ? "q" : "k") + " is already scaled" +
                      (f.empty() ? "" : " by " + f) + " (line " + line(fn.nodes[pre].range) + "), so scale=" +
                      (scale.empty() ? "the default" : scale) + " keeps the numbers");
    }

    // Scores computed in fp32 from upcast q and k while v keeps its dtype (GPT-J,
    // CodeGen): SDPA takes one dtype, and the written fp32 product is a numeric choice.
    {
      bool qk_up = std::any_of(sn.inputs.begin(), sn.inputs.end(), [&](ir::NodeId x) { return upcast(fn, x); });
      bool v_up = std::any_of(on.inputs.begin(), on.inputs.end(), [&](ir::NodeId x) { return upcast(fn, x); });
      if (qk_up && !v_up)
        notes.push_back("q and k are upcast to float32 for the scores and v is not: SDPA needs one dtype, so pass q and k "
                        "in v's dtype (its kernels accumulate q·k and the softmax in fp32) or upcast v too; the "
                        "numbers then differ from this code's in the last bits");
    }

    // A term that names the scores (`mask.to(scores.dtype)`): the fix has no scores, q
    // has their dtype and device.
    std::set<std::string> chain_names;
    for (ir::NodeId x : score_path)
      if (std::string nm = assigned_name(fn.nodes[x]); !nm.empty()) chain_names.insert(nm);
    if (std::string nm = assigned_name(sn); !nm.empty()) chain_names.insert(nm);
    auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    auto rename = [&](const std::string& t) {
      std::string out;
      for (size_t i = 0; i < t.size();) {
        bool matched = false;
        if (i == 0 || !(word(t[i - 1]) || t[i - 1] == '.'))
          for (const std::string& nm : chain_names) {
            size_t e = i + nm.size();
            if (t.compare(i, nm.size(), nm) == 0 && (e >= t.size() || !word(t[e]))) {
              out += q;
              i = e;
              matched = true;
              break;
            }
          }
        if (!matched) out += t[i++];
      }
      return out;
    };
    for (Term& t : terms) t.text = rename(t.text);

    // One attn_mask: the terms added to the scores, then the boolean masks.
    std::string mask;
    std::vector<std::string> plain;
    std::vector<const Term*> conditional;
    bool has_bias = false;
    for (const Term& t : terms) {
      if (t.text.empty()) continue;
      has_bias |= t.bias;
      if (t.conditional) conditional.push_back(&t);
      else plain.push_back(t.text);
    }
    auto sum = [&](const std::vector<std::string>& xs) {
      std::string out;
      for (const auto& x : xs) out += (out.empty() ? "" : " + ") + (xs.size() > 1 ? paren(x) : x);
      return out;
    };
    std::string floats = sum(plain);
    if (conditional.size() == 1 && floats.empty()) {
      floats = conditional[0]->text;
    } else if (conditional.size() == 1) {
      const std::string& c = conditional[0]->text;
      floats = floats + " if " + c + " is None else " + (plain.size() > 1 ? paren(floats) : floats) + " + " + paren(c);
    } else if (!conditional.empty()) {
      for (const Term* t : conditional) plain.push_back(t->text);
      floats = sum(plain);
      notes.push_back("leave out the terms that are None");
    }
    if (!floats.empty() && !masked.empty()) {
      std::string cond;
      for (const auto& m : masked) cond += (cond.empty() ? "" : " | ") + (masked.size() > 1 ? paren(m) : m);
      mask = paren(floats) + ".masked_fill(" + cond + ", float('-inf'))";
    } else if (!floats.empty()) {
      mask = floats;
    } else {
      for (const auto& a : attend) mask += (mask.empty() ? "" : " & ") + (attend.size() > 1 ? paren(a) : a);
    }
    if (!conditional.empty() && !masked.empty() && !floats.empty()) optional_masks = true;
    if (optional_masks && (!floats.empty() || masked.size() > 1))
      notes.push_back("a mask applied only when it is not None: leave it out then");
    // A term or mask mlsem cannot write here (split over lines, or long) still goes into
    // attn_mask: SDPA can take it; the maintainer spells it.
    if (!unspelled.empty()) {
      std::string what = "the masking of line" + std::string(unspelled.size() > 1 ? "s " : " ") + join(unspelled, ", ");
      if (mask.empty()) mask = "<" + what + " as one mask>";
      else notes.push_back("fold " + what + " into attn_mask too");
    }
    if (has_bias && !mask.empty())
      notes.push_back("a float attn_mask: SDPA runs its memory-efficient or math kernel, not flash");
    if (causal && !mask.empty()) {
      notes.push_back("SDPA takes attn_mask or is_causal, not both: fold the causal mask into attn_mask");
      causal = false;
    }

    ir::Node& out = fn.nodes[o];
    out.attrs["sdpa_q"] = q;
    out.attrs["sdpa_k"] = k;
    out.attrs["sdpa_v"] = v;
    if (!mask.empty()) out.attrs["sdpa_mask"] = mask;
    if (causal) out.attrs["sdpa_causal"] = true;
    if (!scale.empty()) out.attrs["sdpa_scale"] = scale;
    std::string note;
    for (const auto& n : notes) note += (note.empty() ? "" : "; ") + n;
    if (!note.empty()) out.attrs["sdpa_note"] = note;
    if (!variant.empty() && !out.attrs.count("context_variant"))
      out.attrs["context_variant"] = "not plain SDPA: " + variant;
  }

  // Is the step under `if X is not None:` for the first name X of `term`?
  bool conditional(const ir::Function& fn, const ir::Node& step, const std::string& term) const {
    size_t end = 0;
    while (end < term.size() && (std::isalnum(static_cast<unsigned char>(term[end])) || term[end] == '_' || term[end] == '.'))
      ++end;
    std::string root = term.substr(0, end);
    if (root.empty()) return false;
    uint32_t r = step.region;
    for (int guard = 0; guard < 16 && r < fn.regions.size(); ++guard) {
      const std::string* cond = str_attr_map(fn.regions[r].attrs, "condition");
      if (cond && cond->find(root + " is not None") != std::string::npos) return true;
      if (r == 0) break;
      r = fn.regions[r].parent;
    }
    return false;
  }

  static const std::string* str_attr_map(const std::map<std::string, ir::Attr>& attrs, const char* key) {
    auto it = attrs.find(key);
    return it == attrs.end() ? nullptr : std::get_if<std::string>(&it->second);
  }

};

}  // namespace

void annotate_attention_fixes(const SourceFile& file, TSNode root, ir::Module& out) {
  FixPass(file, root, out).run();
  mark_ungrouped_kv_copies(file, out);
}

}  // namespace mlsem::python
