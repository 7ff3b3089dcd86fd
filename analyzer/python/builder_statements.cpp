// Builder statements: regions (loops, with, if), blocks and statements, assignments
// and the bindings of names, tuple targets and loop variables to values.
// Relies on builder_expressions.cpp for right-hand sides.
#include "python/builder.h"

namespace mlsem::python::detail {

// ------------------------------------------------------------------ regions

uint32_t Builder::open_region(const char* kind, TSNode src) {
  ir::Region r;
  r.kind = kind;
  r.parent = st_->region;
  r.range = range_of(src);
  st_->fn.regions.push_back(std::move(r));
  st_->region = static_cast<uint32_t>(st_->fn.regions.size() - 1);
  return st_->region;
}

// Each branch of an `if` is a `branch` region inside the `if` region, so context facts
// (python/context.cpp) can tell the branches apart.
void Builder::lower_branch(TSNode block, const char* which, TSNode condition) {
  if (ts_node_is_null(block)) return;
  uint32_t b = open_region("branch", block);
  st_->fn.regions[b].attrs["branch"] = std::string(which);
  if (!ts_node_is_null(condition)) st_->fn.regions[b].attrs["condition"] = clip(text(condition));
  lower_block(block);
  close_region(b);
}

// ------------------------------------------------------------------ statements

bool Builder::too_deep(TSNode at) {
  if (st_->nesting <= kMaxNesting) return false;
  if (!st_->too_deep_reported) {
    st_->too_deep_reported = true;
    diagnose(at, "nested more than " + std::to_string(kMaxNesting) +
                     " levels deep: the rest of this construct is not analyzed");
  }
  return true;
}

void Builder::lower_block(TSNode block) {
  if (ts_node_is_null(block)) return;
  NestingGuard g(st_);
  if (too_deep(block)) return;
  for (TSNode s : named(block)) {
    lower_statement(s);
    // In an inlined helper, code after an unconditional return never runs. (After a
    // return under an `if`, the rest does; the last return lowered is the result.)
    if (sym(s) == S.return_statement && st_->inline_depth > 0) break;
  }
}

void Builder::lower_statement(TSNode s) {
  TSSymbol k = sym(s);
  if (k == S.expression_statement) {
    if (ts_node_child_count(s) == 1) lower_expression_statement(mlsem_ts_first_child(s));
    else
      for (TSNode e : named(s)) lower_expression_statement(e);
  } else if (k == S.return_statement) {
    Value v;
    if (ts_node_named_child_count(s) > 0) v = lower(ts_node_named_child(s, 0));
    st_->scope->ret = std::move(v);
  } else if (k == S.if_statement) {
    lower(field(s, S.f_condition));
    uint32_t r = open_region("if", s);
    lower_branch(field(s, S.f_consequence), "if", field(s, S.f_condition));
    for (TSNode c : named(s)) {
      if (sym(c) == S.elif_clause) {
        lower(field(c, S.f_condition));
        lower_branch(field(c, S.f_consequence), "elif", field(c, S.f_condition));
      } else if (sym(c) == S.else_clause) {
        lower_branch(field(c, S.f_body), "else", TSNode{});
      }
    }
    close_region(r);
  } else if (k == S.for_statement) {
    TSNode right = field(s, S.f_right);
    Value it = lower(right);
    uint32_t r = open_region("loop", s);
    bind_loop_target(field(s, S.f_left), right, it);
    lower_loop_body(r, field(s, S.f_body));
    close_region(r);
    lower_else(s);
  } else if (k == S.while_statement) {
    uint32_t r = open_region("loop", s);
    lower(field(s, S.f_condition));
    lower_loop_body(r, field(s, S.f_body));
    close_region(r);
    lower_else(s);
  } else if (k == S.with_statement) {
    lower_with(s);
  } else if (k == S.try_statement) {
    for (TSNode c : named(s)) {
      TSSymbol ck = sym(c);
      if (ck == S.block) lower_block(c);
      else if (ck == S.except_clause || ck == S.finally_clause || ck == S.else_clause)
        for (TSNode b : named(c))
          if (sym(b) == S.block) lower_block(b);
    }
  } else if (k == S.import_statement || k == S.import_from_statement) {
    if (st_->fn.name != "<module>") add_import(s, nullptr, &st_->scope->local_aliases);
  } else if (k == S.function_definition || k == S.class_definition || k == S.decorated_definition ||
             k == S.future_import_statement) {
    // Lowered as functions of their own.
  } else if (k == S.block) {
    lower_block(s);
  } else if (k == S.match_statement) {
    if (ts_node_named_child_count(s) > 0) lower(ts_node_named_child(s, 0));  // the subject
    for (TSNode c : named(s))
      if (sym(c) == S.block) {
        for (TSNode cc : named(c))
          if (sym(cc) == S.case_clause)
            for (TSNode b : named(cc))
              if (sym(b) == S.block) lower_block(b);
      }
  } else if (ts_node_is_error(s)) {
    // Recovered statements inside a syntax error are still analyzed.
    NestingGuard g(st_);
    if (too_deep(s)) return;
    for (TSNode c : named(s)) lower_statement(c);
  } else {
    // assert, raise, del, print, global, pass, ...: their expressions may still sync.
    NestingGuard g(st_);
    if (too_deep(s)) return;
    for (TSNode c : named(s))
      if (is_expression(c)) lower(c);
  }
}

bool Builder::is_expression(TSNode n) const {
  TSSymbol k = sym(n);
  return k == S.call || k == S.attribute || k == S.identifier || k == S.binary_operator ||
         k == S.subscript || k == S.parenthesized_expression || k == S.unary_operator ||
         k == S.comparison_operator || k == S.boolean_operator || k == S.not_operator ||
         k == S.string || k == S.tuple || k == S.list || k == S.conditional_expression ||
         k == S.await_ || k == S.list_comprehension || k == S.generator_expression ||
         k == S.dictionary || k == S.expression_list || k == S.assignment || k == S.augmented_assignment;
}

void Builder::lower_loop_body(uint32_t region, TSNode body) {
  uint32_t before = st_->training_marks;
  st_->direct_marks.push_back(0);
  lower_block(body);
  bool direct = st_->direct_marks.back() > 0;
  st_->direct_marks.pop_back();
  st_->fn.regions[region].attrs["training"] = st_->training_marks > before;
  // The loop that is one training step per iteration (not an epoch loop around it).
  st_->fn.regions[region].attrs["innermost_training"] = direct;
}

void Builder::count_training_mark() {
  ++st_->training_marks;
  if (!st_->direct_marks.empty()) ++st_->direct_marks.back();
}

void Builder::lower_else(TSNode loop) {
  TSNode alt = field(loop, S.f_alternative);
  if (!ts_node_is_null(alt)) lower_block(field(alt, S.f_body));
}

void Builder::lower_with(TSNode s) {
  std::vector<uint32_t> opened;
  TSNode body{};
  for (TSNode c : named(s)) {
    if (sym(c) == S.block) body = c;
    if (sym(c) != S.with_clause) continue;
    for (TSNode item : named(c)) {
      if (sym(item) != S.with_item) continue;
      TSNode e = field(item, S.f_value), target{};
      if (sym(e) == S.as_pattern) {
        target = field(e, S.f_alias);
        e = ts_node_named_child(e, 0);
      }
      e = unparen(e);
      std::string context;
      Value v;
      if (sym(e) == S.call) context = canonical(field(e, S.f_function));
      if (context.rfind("torch.", 0) != 0) {
        v = lower(e);  // open(...), a variable holding a context, ...
        std::string_view callee = str_attr(v.node, "callee");
        if (context.empty()) context = callee.empty() ? std::string(text(e)) : std::string(callee);
      }
      uint32_t r = open_region("with", s);
      st_->fn.regions[r].attrs["context"] = context;
      opened.push_back(r);
      if (!ts_node_is_null(target)) {
        if (sym(target) == S.as_pattern_target && ts_node_named_child_count(target) > 0)
          target = ts_node_named_child(target, 0);
        bind_target(target, v, e);
      }
    }
  }
  lower_block(body);
  for (auto it = opened.rbegin(); it != opened.rend(); ++it) close_region(*it);
}

void Builder::lower_expression_statement(TSNode e) {
  TSSymbol k = sym(e);
  if (is_literal(e) || k == S.concatenated_string) return;  // docstrings
  if (k == S.assignment) lower_assignment(e);
  else if (k == S.augmented_assignment) lower_augmented(e);
  else lower(e);
}

Value Builder::lower_assignment(TSNode e) {
  TSNode right = field(e, S.f_right);
  Value v;
  if (!ts_node_is_null(right)) {
    if (sym(right) == S.assignment) v = lower_assignment(right);  // a = b = expr
    else v = lower(right);
  }
  if (!ts_node_is_null(right)) bind_target(field(e, S.f_left), v, right);
  return v;
}

void Builder::lower_augmented(TSNode e) {
  TSNode left = field(e, S.f_left);
  std::string_view op = text(field(e, S.f_operator));
  if (!op.empty() && op.back() == '=') op.remove_suffix(1);
  Value a = lower(left);
  Value b = lower(field(e, S.f_right));
  std::vector<Value> operands{a, b};
  Value r = arith(op, operands, e, SIZE_MAX);
  bind_target(left, r, e);
}

void Builder::bind_target(TSNode target, const Value& v, TSNode src) {
  target = unparen(target);
  if (ts_node_is_null(target)) return;
  NestingGuard g(st_);
  if (too_deep(target)) return;
  TSSymbol k = sym(target);
  ++st_->env_writes;
  if (k == S.identifier) {
    st_->scope->vars[text(target)] = v;
  } else if (k == S.attribute) {
    st_->scope->attrs[std::string(text(target))] = v;
  } else if (k == S.pattern_list || k == S.tuple_pattern || k == S.list_pattern || k == S.tuple ||
             k == S.list || k == S.expression_list) {
    auto elems = named(target);
    bool scalar_source = op_of(v.node) == "scalar";
    for (size_t i = 0; i < elems.size(); ++i) {
      if (sym(elems[i]) == S.list_splat_pattern || sym(elems[i]) == S.list_splat) continue;
      Value e;
      if (v.is_tuple) {
        if (i < v.items.size()) e = val(v.items[i]);
      } else if (scalar_source) {
        e = val(emit_scalar(elems[i], false));  // B, T, C = x.size()
      } else if (v.node != kNoNode) {
        NodeId p = emit("part", {v.node}, src);
        set(p, "index", static_cast<int64_t>(i));
        e = val(p);
      }
      bind_target(elems[i], e, src);
    }
  } else if (k == S.list_splat_pattern || k == S.as_pattern_target) {
    if (ts_node_named_child_count(target) > 0) bind_target(ts_node_named_child(target, 0), v, src);
  }
}

void Builder::bind_loop_target(TSNode target, TSNode iterable, const Value& it) {
  iterable = unparen(iterable);
  if (sym(iterable) == S.call) {
    std::string_view fn = text(field(iterable, S.f_function));
    auto args = named(field(iterable, S.f_arguments));
    if (fn == "range") {
      bind_names_as(target, true);
      return;
    }
    if (fn == "enumerate" && !args.empty()) {
      target = unparen(target);
      auto elems = named(target);
      if ((sym(target) == S.pattern_list || sym(target) == S.tuple_pattern) && elems.size() == 2) {
        bind_names_as(elems[0], true);
        Value inner = lower(args[0]);
        bind_loop_target(elems[1], args[0], inner);
        return;
      }
    }
  }
  if (it.module >= 0) {
    const ModuleDesc& d = modules_[it.module];
    int element = d.element >= 0 ? d.element : (d.items.empty() ? -1 : d.items.front());
    if (element >= 0 && sym(unparen(target)) == S.identifier) {
      Value e;
      e.module = element;
      bind_target(target, e, target);
      return;
    }
  }
  bind_names_as(target, false);
}

void Builder::bind_names_as(TSNode target, bool scalar) {
  target = unparen(target);
  NestingGuard g(st_);
  if (too_deep(target)) return;
  if (sym(target) == S.identifier) {
    NodeId id = scalar ? emit_scalar(target, false) : emit_name(target, std::string(text(target)));
    ++st_->env_writes;
    st_->scope->vars[text(target)] = val(id);
    return;
  }
  for (TSNode c : named(target)) bind_names_as(c, scalar);
}

}  // namespace mlsem::python::detail
