// Builder op table: every torch / functional / tensor-method spelling of a modelled
// operation mapped to its IR op, and lower_op, which emits that op with its
// attributes (dims, dtypes, causal masks). Relies on builder_emit.cpp.
#include "python/builder.h"

#include <cmath>

#include "python/names.h"

namespace mlsem::python::detail {

// ------------------------------------------------------------------ the op table

const Builder::OpSpec* Builder::find_op(std::string_view name, uint8_t where) {
  static const std::unordered_map<std::string_view, OpSpec> kOps = [] {
    const OpSpec specs[] = {
        {"matmul", kTM, Kind::kMatmul, "matmul"},
        {"mm", kTM, Kind::kMatmul, "matmul"},
        {"bmm", kTM, Kind::kMatmul, "matmul"},
        {"baddbmm", kTM, Kind::kBaddbmm, "matmul"},
        {"einsum", kTorchFn, Kind::kEinsum, "matmul"},
        {"softmax", kAll, Kind::kSoftmax, "softmax"},
        {"log_softmax", kAll, Kind::kSoftmax, "log_softmax"},
        {"dropout", kTF, Kind::kDropout, "dropout"},
        {"masked_fill", kTM, Kind::kMaskedFill, "mask"},
        {"where", kTorchFn, Kind::kWhere, "mask"},
        {"scaled_dot_product_attention", kFunctionalFn, Kind::kSdpa, "sdpa"},
        {"exp", kTM, Kind::kUnary, "exp"},
        {"log", kTM, Kind::kUnary, "log"},
        {"sqrt", kTM, Kind::kUnary, "sqrt"},
        {"rsqrt", kTM, Kind::kUnary, "rsqrt"},
        {"reciprocal", kTM, Kind::kUnary, "reciprocal"},
        {"abs", kTM, Kind::kUnary, "abs"},
        {"tanh", kAll, Kind::kUnary, "tanh"},
        {"erf", kTM, Kind::kUnary, "erf"},
        {"sigmoid", kAll, Kind::kUnary, "sigmoid"},
        {"expit", kTorchFn, Kind::kUnary, "sigmoid"},
        {"sin", kTM, Kind::kUnary, "sin"},
        {"cos", kTM, Kind::kUnary, "cos"},
        {"neg", kTM, Kind::kUnary, "neg"},
        {"relu", kAll, Kind::kUnary, "relu"},
        {"silu", kAll, Kind::kUnary, "silu"},
        {"leaky_relu", kAll, Kind::kUnary, "leaky_relu"},
        {"softplus", kAll, Kind::kUnary, "softplus"},
        {"mish", kAll, Kind::kUnary, "mish"},
        {"hardswish", kAll, Kind::kUnary, "hardswish"},
        {"gelu", kAll, Kind::kGelu, "gelu"},
        {"mean", kTM, Kind::kReduce, "mean"},
        {"sum", kTM, Kind::kReduce, "sum"},
        {"var", kTM, Kind::kReduce, "var"},
        {"var_mean", kTorchFn, Kind::kReduce, "var"},
        {"std_mean", kTorchFn, Kind::kReduce, "std"},
        {"std", kTM, Kind::kReduce, "std"},
        {"max", kTM, Kind::kReduce, "max"},
        {"min", kTM, Kind::kReduce, "min"},
        {"amax", kTM, Kind::kReduce, "amax"},
        {"norm", kTM, Kind::kReduce, "norm"},
        {"logsumexp", kTM, Kind::kReduce, "logsumexp"},
        {"transpose", kTM, Kind::kTranspose, "transpose"},
        {"swapaxes", kTM, Kind::kTranspose, "transpose"},
        {"t", kTM, Kind::kT, "transpose"},
        {"permute", kTM, Kind::kPermute, "permute"},
        {"view", kMethod, Kind::kReshape, "reshape"},
        {"reshape", kTM, Kind::kReshape, "reshape"},
        {"flatten", kTM, Kind::kReshape, "reshape"},
        {"unflatten", kTM, Kind::kReshape, "reshape"},
        {"view_as", kMethod, Kind::kReshape, "reshape"},
        {"reshape_as", kMethod, Kind::kReshape, "reshape"},
        {"unsqueeze", kTM, Kind::kReshape, "reshape"},
        {"squeeze", kTM, Kind::kReshape, "reshape"},
        {"contiguous", kMethod, Kind::kIdentity, ""},
        {"split", kTM, Kind::kSplit, "split"},
        {"chunk", kTM, Kind::kSplit, "split"},
        {"unbind", kTM, Kind::kSplit, "split"},
        {"tensor_split", kTM, Kind::kSplit, "split"},
        {"cat", kTorchFn, Kind::kCat, "cat"},
        {"concat", kTorchFn, Kind::kCat, "cat"},
        {"concatenate", kTorchFn, Kind::kCat, "cat"},
        {"stack", kTorchFn, Kind::kCat, "stack"},
        {"size", kMethod, Kind::kSize, "scalar"},
        {"dim", kMethod, Kind::kSize, "scalar"},
        {"numel", kTM, Kind::kSize, "scalar"},
        {"float", kMethod, Kind::kCast, "float32"},
        {"half", kMethod, Kind::kCast, "float16"},
        {"bfloat16", kMethod, Kind::kCast, "bfloat16"},
        {"double", kMethod, Kind::kCast, "float64"},
        {"to", kMethod, Kind::kTo, "cast"},
        {"type", kMethod, Kind::kTo, "cast"},
        {"type_as", kMethod, Kind::kTypeAs, "cast"},
        {"item", kMethod, Kind::kSync, "item"},
        {"cpu", kMethod, Kind::kSync, "cpu"},
        {"tolist", kMethod, Kind::kSync, "tolist"},
        {"numpy", kMethod, Kind::kSync, "numpy"},
        {"backward", kMethod, Kind::kBackward, "backward"},
        {"linear", kFunctionalFn, Kind::kLinear, "linear"},
        {"conv1d", kTF, Kind::kConv, "conv"},
        {"conv2d", kTF, Kind::kConv, "conv"},
        {"conv3d", kTF, Kind::kConv, "conv"},
        {"embedding", kTF, Kind::kEmbedding, "embedding"},
        {"layer_norm", kTF, Kind::kNorm, "layer_norm"},
        {"rms_norm", kTF, Kind::kNorm, "rms_norm"},
        {"group_norm", kTF, Kind::kNorm, "group_norm"},
        {"batch_norm", kTF, Kind::kNorm, "batch_norm"},
        {"cross_entropy", kFunctionalFn, Kind::kLoss, "cross_entropy"},
        {"nll_loss", kFunctionalFn, Kind::kLoss, "nll_loss"},
        {"gather", kTM, Kind::kGather, "gather"},
        {"one_hot", kFunctionalFn, Kind::kUnary, "one_hot"},
        {"pow", kTM, Kind::kPow, "pow"},
        {"clamp", kTM, Kind::kClamp, "clamp"},
        {"clip", kTM, Kind::kClamp, "clamp"},
        {"tril", kTM, Kind::kTrilTriu, "tril"},
        {"triu", kTM, Kind::kTrilTriu, "triu"},
        {"ones", kTorchFn, Kind::kCreation, "ones"},
        {"zeros", kTorchFn, Kind::kCreation, "zeros"},
        {"full", kTorchFn, Kind::kCreation, "full"},
        {"arange", kTorchFn, Kind::kCreation, "arange"},
        {"empty", kTorchFn, Kind::kCreation, "empty"},
        {"randn", kTorchFn, Kind::kCreation, "randn"},
        {"rand", kTorchFn, Kind::kCreation, "randn"},
        {"expand", kMethod, Kind::kShape, "expand"},
        {"expand_as", kMethod, Kind::kShape, "expand"},
        {"repeat", kMethod, Kind::kShape, "repeat"},
        {"repeat_interleave", kTM, Kind::kRepeatInterleave, "repeat_interleave"},
        {"add", kTM, Kind::kArith, "+"},
        {"sub", kTM, Kind::kArith, "-"},
        {"mul", kTM, Kind::kArith, "*"},
        {"multiply", kTM, Kind::kArith, "*"},
        {"div", kTM, Kind::kArith, "/"},
        {"divide", kTM, Kind::kArith, "/"},
        {"true_divide", kTM, Kind::kArith, "/"},
    };
    std::unordered_map<std::string_view, OpSpec> m;
    for (const OpSpec& s : specs) m.emplace(s.name, s);
    return m;
  }();
  auto it = kOps.find(name);
  return it != kOps.end() && (it->second.where & where) ? &it->second : nullptr;
}

Value Builder::lower_op(const OpSpec& spec, Args& a, TSNode e, const std::string& callee) {
  std::string op(spec.op);
  auto finish = [&](NodeId id) {
    if (id != kNoNode && node(id).attrs.count("callee") == 0) set(id, "callee", callee);
    return val(id);
  };
  switch (spec.kind) {
    case Kind::kMatmul:
      return finish(emit("matmul", {arg_node(a, 0), arg_node(a, 1)}, e));
    case Kind::kBaddbmm: {
      NodeId bias = arg_node(a, 0, "input");
      NodeId mm = emit("matmul", {arg_node(a, 1, "batch1"), arg_node(a, 2, "batch2")}, e);
      set(mm, "callee", callee);
      NodeId out = mm;
      TSNode alpha = a.keyword("alpha");
      if (!ts_node_is_null(alpha) && number(alpha) != std::optional<double>(1.0))
        out = make_scale(out, as_node(lower(alpha), alpha), false, e);
      TSNode beta = a.keyword("beta");
      if (ts_node_is_null(beta) || number(beta) != std::optional<double>(0.0))
        out = emit("add", {bias, out}, e);
      return finish(out);
    }
    case Kind::kEinsum: {
      TSNode spec_node = a.expr(0);
      std::vector<std::pair<NodeId, TSNode>> operands;
      TSNode first = a.expr(1);
      if (a.count() == 2 && (sym(unparen(first)) == S.list || sym(unparen(first)) == S.tuple)) {
        for (TSNode c : named(unparen(first))) operands.emplace_back(as_node(lower(c), c), c);
      } else {
        for (size_t i = 1; i < a.count(); ++i) operands.emplace_back(arg_node(a, i), a.expr(i));
      }
      std::optional<EinsumMatmul> mm;
      if (!ts_node_is_null(spec_node) && sym(unparen(spec_node)) == S.string && operands.size() == 2)
        mm = einsum_as_matmul(unquote(text(unparen(spec_node))));
      if (!mm && operands.size() == 2 && sym(unparen(spec_node)) == S.string)
        return einsum_contraction(operands[0].first, operands[1].first, unparen(spec_node), e, callee);
      if (!mm) {
        std::vector<NodeId> ins;
        for (auto& [id, n] : operands) ins.push_back(id);
        NodeId id = emit("call", std::move(ins), e);
        set(id, "callee", callee);
        return val(id);
      }
      auto t = [&](NodeId x, TSNode src) {
        NodeId id = emit("transpose", {x}, src);
        set(id, "dim0", int64_t{-2});
        set(id, "dim1", int64_t{-1});
        return id;
      };
      NodeId lhs = mm->transpose_a ? t(operands[0].first, operands[0].second) : operands[0].first;
      NodeId rhs = mm->transpose_b ? t(operands[1].first, operands[1].second) : operands[1].first;
      NodeId id = emit("matmul", {lhs, rhs}, e);
      set(id, "text", clip(text(spec_node)));
      return finish(id);
    }
    case Kind::kSoftmax: {
      NodeId id = emit(op, {arg_node(a, 0, "input")}, e);
      set_dim(id, a.get(1, "dim"));
      TSNode dt = a.keyword("dtype");
      if (!ts_node_is_null(dt)) set(id, "dtype", dtype_name(text(dt)).empty() ? clip(text(dt)) : dtype_name(text(dt)));
      return finish(id);
    }
    case Kind::kDropout: {
      NodeId id = emit("dropout", {arg_node(a, 0, "input")}, e);
      TSNode p = a.get(1, "p");
      if (!ts_node_is_null(p)) {
        if (auto v = number(p)) set(id, "p", *v);
        else set(id, "p_text", clip(text(p)));
      } else {
        set(id, "p", 0.5);
      }
      return finish(id);
    }
    case Kind::kMaskedFill: {
      NodeId x = arg_node(a, 0), m = arg_node(a, 1, "mask");
      NodeId v = arg_node(a, 2, "value");
      NodeId id = emit("mask", {x, m}, e);
      set(id, "kind", std::string("fill"));
      if (auto c = const_value(v)) set(id, "value", *c);
      set(id, "causal", traces_to(m, true));
      return finish(id);
    }
    case Kind::kWhere: {
      NodeId cond = arg_node(a, 0, "condition"), x = arg_node(a, 1, "input"), y = arg_node(a, 2, "other");
      auto cy = const_value(y), cx = const_value(x);
      if ((cy && is_very_negative(*cy)) || (cx && is_very_negative(*cx))) {
        bool fill_y = cy && is_very_negative(*cy);
        NodeId id = emit("mask", {fill_y ? x : y, cond}, e);
        set(id, "kind", std::string("where"));
        set(id, "value", fill_y ? *cy : *cx);
        set(id, "causal", traces_to(cond, true));
        return finish(id);
      }
      NodeId id = emit("call", {cond, x, y}, e);
      return finish(id);
    }
    case Kind::kSdpa: {
      NodeId id = emit("sdpa", {arg_node(a, 0, "query"), arg_node(a, 1, "key"), arg_node(a, 2, "value")}, e);
      TSNode causal = a.get(5, "is_causal");
      if (auto b = bool_of(causal)) set(id, "is_causal", *b);
      else if (ts_node_is_null(causal)) set(id, "is_causal", false);
      else set(id, "is_causal_text", clip(text(causal)));
      set(id, "enable_gqa", bool_of(a.keyword("enable_gqa")).value_or(false));
      TSNode mask = a.get(3, "attn_mask");
      set(id, "has_mask", !ts_node_is_null(mask) && !is_none(mask));
      return finish(id);
    }
    case Kind::kUnary: {
      Value x = arg(a, 0);
      if (scalar_like(x)) return val(emit_scalar(e, op == "sqrt" || op == "rsqrt"));
      return finish(emit(op, {as_node(x, a.expr(0))}, e));
    }
    case Kind::kGelu: {
      NodeId id = emit("gelu", {arg_node(a, 0, "input")}, e);
      TSNode ap = a.keyword("approximate");
      set(id, "approximate", ts_node_is_null(ap) ? std::string("none") : unquote(text(ap)));
      return finish(id);
    }
    case Kind::kReduce: {
      NodeId id = emit(op, {arg_node(a, 0, "input")}, e);
      set_dim(id, a.get(op == "norm" ? 2 : 1, "dim"));
      if (auto k = bool_of(a.get(op == "norm" ? 3 : 2, "keepdim"))) set(id, "keepdim", *k);
      if (op == "var" || op == "std") {
        if (auto u = bool_of(a.keyword("unbiased"))) set(id, "unbiased", *u);
        if (auto c = int_of(a.keyword("correction"))) set(id, "correction", *c);
      }
      if (spec.name == "var_mean" || spec.name == "std_mean") {
        // torch.var_mean(x, dim, ...) -> (var, mean): the mean over the same dims.
        finish(id);
        NodeId m = emit("mean", {arg_node(a, 0, "input")}, e);
        node(m).attrs = node(id).attrs;
        node(m).attrs.erase("unbiased");
        node(m).attrs.erase("correction");
        Value v;
        v.is_tuple = true;
        v.items = {id, m};
        return v;
      }
      return finish(id);
    }
    case Kind::kTranspose: {
      NodeId id = emit("transpose", {arg_node(a, 0, "input")}, e);
      set_dim(id, a.get(1, "dim0"), "dim0");
      set_dim(id, a.get(2, "dim1"), "dim1");
      return finish(id);
    }
    case Kind::kT: {
      NodeId id = emit("transpose", {arg_node(a, 0, "input")}, e);
      set(id, "dim0", int64_t{-2});
      set(id, "dim1", int64_t{-1});
      return finish(id);
    }
    case Kind::kPermute: {
      NodeId x = arg_node(a, 0, "input");
      std::vector<TSNode> dims;
      for (size_t i = 1; i < a.count(); ++i) dims.push_back(a.expr(i));
      TSNode kd = a.keyword("dims");
      if (dims.size() == 1 || !ts_node_is_null(kd)) {
        TSNode t = unparen(ts_node_is_null(kd) ? dims[0] : kd);
        if (sym(t) == S.tuple || sym(t) == S.list) dims = named(t).vec();
      }
      std::vector<int64_t> perm;
      for (TSNode d : dims) {
        auto v = int_of(d);
        if (!v) {
          perm.clear();
          break;
        }
        perm.push_back(*v);
      }
      bool swaps_last_two = perm.size() >= 2;
      size_t n = perm.size();
      for (size_t i = 0; swaps_last_two && i < n; ++i) {
        int64_t want = i + 2 < n ? static_cast<int64_t>(i) : static_cast<int64_t>(i == n - 2 ? n - 1 : n - 2);
        int64_t got = perm[i] < 0 ? perm[i] + static_cast<int64_t>(n) : perm[i];
        swaps_last_two = got == want;
      }
      NodeId id = emit(swaps_last_two ? "transpose" : "permute", {x}, e);
      if (swaps_last_two) {
        set(id, "dim0", int64_t{-2});
        set(id, "dim1", int64_t{-1});
      } else {
        std::string t;
        for (TSNode d : dims) t += (t.empty() ? "" : ", ") + std::string(text(d));
        set(id, "dims", clip(t));
      }
      return finish(id);
    }
    case Kind::kReshape:
    case Kind::kShape: {
      NodeId id = emit(op, {arg_node(a, 0, "input")}, e);
      shape_attrs(id, a, spec.name);
      return finish(id);
    }
    case Kind::kIdentity:
      return arg(a, 0);
    case Kind::kSplit: {
      NodeId id = emit("split", {arg_node(a, 0, "input")}, e);
      shape_attrs(id, a, spec.name);
      return finish(id);
    }
    case Kind::kCat: {
      TSNode list = unparen(a.get(0, "tensors"));
      std::vector<NodeId> ins;
      if (!ts_node_is_null(list) && (sym(list) == S.list || sym(list) == S.tuple)) {
        for (TSNode c : named(list))
          if (sym(c) != S.list_splat) ins.push_back(as_node(lower(c), c));
      } else {
        Value v = arg(a, 0);
        ins = v.is_tuple ? v.items : std::vector<NodeId>{as_node(v, list)};
      }
      NodeId id = emit(op, std::move(ins), e);
      set_dim(id, a.get(1, "dim"));
      return finish(id);
    }
    case Kind::kSize:
      return val(emit_scalar(e, false));
    case Kind::kCast: {
      NodeId id = emit("cast", {arg_node(a, 0)}, e);
      set(id, "dtype", std::string(op));
      return finish(id);
    }
    case Kind::kTo: {
      std::string dtype;
      std::string_view written;  // the dtype argument as written, for fixes
      TSNode kd = a.keyword("dtype");
      if (!ts_node_is_null(kd)) {
        written = text(kd);
        dtype = dtype_name(written);
        if (dtype.empty()) dtype = "like";
      }
      for (size_t i = 1; dtype.empty() && i < a.count(); ++i) {
        std::string_view t = text(a.expr(i));
        written = t;
        dtype = dtype_name(t);
        if (dtype.empty() && t.size() > 6 && t.substr(t.size() - 6) == ".dtype") dtype = "like";
        // A variable holding a dtype (`input_dtype = x.dtype; ... .to(input_dtype)`), by
        // its name or by what it was assigned (`input_type = x.dtype`).
        if (dtype.empty() && t.size() >= 5 && t.substr(t.size() - 5) == "dtype" &&
            t.find_first_of(".([") == std::string_view::npos)
          dtype = "like";
        if (dtype.empty() && sym(a.expr(i)) == S.identifier) {
          NodeId v = arg_node(a, i);
          if (v != kNoNode && node(v).op == "name") {
            auto it = node(v).attrs.find("name");
            const std::string* n = it == node(v).attrs.end() ? nullptr : std::get_if<std::string>(&it->second);
            if (n && n->size() > 6 && n->compare(n->size() - 6, 6, ".dtype") == 0) dtype = "like";
          }
        }
      }
      if (dtype.empty()) return arg(a, 0);  // .to(device): a move, not a cast
      NodeId id = emit("cast", {arg_node(a, 0)}, e);
      set(id, "dtype", dtype);
      if (!written.empty() && written.size() <= 60) set(id, "dtype_text", std::string(written));
      return finish(id);
    }
    case Kind::kTypeAs: {
      NodeId id = emit("cast", {arg_node(a, 0)}, e);
      set(id, "dtype", std::string("like"));
      if (a.count() > 1) {
        std::string_view other = text(a.expr(1));
        if (!other.empty() && other.size() <= 54) set(id, "dtype_text", std::string(other) + ".dtype");
      }
      return finish(id);
    }
    case Kind::kSync: {
      NodeId x = arg_node(a, 0);
      if (op_of(x) == "sync" || flag(x, "host")) {  // `.cpu().numpy().tolist()`: on the host already
        NodeId id = emit("call", {x}, e);
        set(id, "callee", "." + std::string(spec.name));
        set(id, "host", true);
        return val(id);
      }
      NodeId id = emit("sync", {x}, e);
      set(id, "method", std::string(op));
      return finish(id);
    }
    case Kind::kBackward: {
      count_training_mark();
      return finish(emit("backward", {arg_node(a, 0)}, e));
    }
    case Kind::kLinear:
    case Kind::kConv: {
      NodeId id = emit(op, {arg_node(a, 0, "input")}, e);
      TSNode b = a.get(2, "bias");
      set(id, "bias", !ts_node_is_null(b) && !is_none(b));
      return finish(id);
    }
    case Kind::kEmbedding:
    case Kind::kNorm:
      return finish(emit(op, {arg_node(a, 0, "input")}, e));
    case Kind::kLoss:
      return finish(emit(op, {arg_node(a, 0, "input"), arg_node(a, 1, "target")}, e));
    case Kind::kGather: {
      NodeId id = emit("gather", {arg_node(a, 0, "input"), arg_node(a, 2, "index")}, e);
      set_dim(id, a.get(1, "dim"));
      return finish(id);
    }
    case Kind::kPow: {
      size_t mark = st_->fn.nodes.size();
      uint32_t writes = st_->env_writes;
      Value x = arg(a, 0);
      TSNode ex = a.get(1, "exponent");
      auto v = number(ex);
      if (scalar_like(x)) {
        bool sq = flag(x.node, "sqrt_like") || (v && std::fabs(std::fabs(*v) - 0.5) < 1e-12);
        truncate(mark, writes);
        return val(emit_scalar(e, sq));
      }
      NodeId id = emit("pow", {as_node(x, a.expr(0))}, e);
      if (v) set(id, "exponent", *v);
      else {
        NodeId exponent = arg_node(a, 1, "exponent");  // may emit: take the id first
        if (exponent != kNoNode) node(id).inputs.push_back(exponent);
      }
      return finish(id);
    }
    case Kind::kClamp: {
      NodeId id = emit("clamp", {arg_node(a, 0, "input")}, e);
      if (auto lo = number(a.get(1, "min"))) set(id, "min", *lo);
      if (auto hi = number(a.get(2, "max"))) set(id, "max", *hi);
      return finish(id);
    }
    case Kind::kCreation: {
      NodeId id = emit(op, {}, e);
      if (op == "full") {
        if (auto v = number(a.get(1, "fill_value"))) set(id, "value", *v);
      }
      return finish(id);
    }
    case Kind::kTrilTriu: {
      NodeId id = emit(op, {arg_node(a, 0, "input")}, e);
      if (auto d = int_of(a.get(1, "diagonal"))) set(id, "diagonal", *d);
      return finish(id);
    }
    case Kind::kRepeatInterleave: {
      NodeId id = emit(op, {arg_node(a, 0, "input")}, e);
      TSNode r = a.get(1, "repeats");
      if (!ts_node_is_null(r)) set(id, "repeats", clip(text(r)));
      if (!ts_node_is_null(r) && count_value(r) == std::optional<double>(1.0)) set(id, "repeat_one", true);
      set_dim(id, a.get(2, "dim"));
      return finish(id);
    }
    case Kind::kArith: {
      std::vector<Value> vs{arg(a, 0)};
      vs.push_back(arg(a, 1));
      if (vs[1].node == kNoNode) {
        TSNode other = a.keyword("other");
        if (!ts_node_is_null(other)) vs[1] = lower(other);
      }
      return finish(arith(op, vs, e, SIZE_MAX).node);
    }
  }
  return opaque(a, e, callee);
}

}  // namespace mlsem::python::detail
