// Builder indexing: imports, defs and classes of the file (before any lowering),
// the nn.Modules an expression builds, and what each class's __init__ assigns to
// self.<name> (modules, scalars, causal buffers). Relies on builder_names.cpp.
#include "python/builder.h"

#include <algorithm>

#include "python/names.h"

namespace mlsem::python::detail {

// ------------------------------------------------------------------ index

void Builder::add_import(
    TSNode stmt, std::unordered_map<std::string_view, std::string>* module_map, std::vector<std::pair<std::string_view, std::string>>* local) {
  auto bind = [&](std::string_view name, std::string value) {
    if (module_map) (*module_map)[name] = std::move(value);
    else local->emplace_back(name, std::move(value));
  };
  if (sym(stmt) == S.import_statement) {
    for (TSNode c : named(stmt)) {
      if (sym(c) == S.aliased_import) {
        bind(text(field(c, S.f_alias)), std::string(text(field(c, S.f_name))));
      } else if (sym(c) == S.dotted_name) {
        std::string_view full = text(c);
        std::string_view root = full.substr(0, full.find('.'));
        bind(root, std::string(root));
      }
    }
    return;
  }
  TSNode mod = field(stmt, S.f_module_name);
  if (ts_node_is_null(mod)) return;
  std::string base(text(mod));
  for (TSNode c : named(stmt)) {
    if (same(c, mod)) continue;
    std::string prefix = base.empty() || base.back() == '.' ? base : base + ".";
    if (sym(c) == S.aliased_import) {
      bind(text(field(c, S.f_alias)), prefix + std::string(text(field(c, S.f_name))));
    } else if (sym(c) == S.dotted_name) {
      bind(text(c), prefix + std::string(text(c)));
    }
  }
}

void Builder::index_block(TSNode container, const std::string& prefix, int cls, int depth) {
  if (depth > kMaxNesting) return;
  for (TSNode s : named(container)) index_statement(s, prefix, cls, depth, TSNode{});
}

void Builder::index_statement(
    TSNode s, const std::string& prefix, int cls, int depth, TSNode decorated) {
  TSSymbol k = sym(s);
  if (k == S.function_definition) {
    FuncInfo f;
    std::string_view short_name = text(field(s, S.f_name));
    f.name = prefix + std::string(short_name);
    f.def = s;
    f.decorated = decorated;
    f.cls = cls;
    f.is_method = cls >= 0 && !has_decorator(decorated, "staticmethod");
    int id = static_cast<int>(functions_.size());
    function_by_name_[f.name] = id;
    if (cls >= 0) classes_[cls].methods[short_name] = id;
    std::string nested = f.name + ".";
    functions_.push_back(std::move(f));
    index_block(field(s, S.f_body), nested, -1, depth + 1);
  } else if (k == S.class_definition) {
    ClassInfo c;
    std::string_view short_name = text(field(s, S.f_name));
    c.name = prefix + std::string(short_name);
    TSNode supers = field(s, S.f_superclasses);
    if (!ts_node_is_null(supers))
      for (TSNode b : named(supers))
        if (sym(b) == S.identifier) c.bases.push_back(text(b));
    int id = static_cast<int>(classes_.size());
    class_by_name_[short_name] = id;
    std::string nested = c.name + ".";
    classes_.push_back(std::move(c));
    index_block(field(s, S.f_body), nested, id, depth + 1);
  } else if (k == S.decorated_definition) {
    TSNode def = field(s, S.f_definition);
    if (!ts_node_is_null(def)) index_statement(def, prefix, cls, depth, s);
  } else if (k == S.import_statement || k == S.import_from_statement) {
    if (prefix.empty()) add_import(s, &aliases_, nullptr);
  } else if (k == S.if_statement || k == S.try_statement || k == S.with_statement ||
             k == S.for_statement || k == S.while_statement || k == S.elif_clause ||
             k == S.else_clause || k == S.except_clause || k == S.finally_clause ||
             k == S.block || ts_node_is_error(s)) {
    // Defs under `if TYPE_CHECKING:`, `try:` and inside recovered syntax errors.
    for (TSNode c : named(s)) {
      TSSymbol ck = sym(c);
      if (ck == S.block || ck == S.elif_clause || ck == S.else_clause || ck == S.except_clause ||
          ck == S.finally_clause || ck == S.function_definition || ck == S.class_definition ||
          ck == S.decorated_definition || ck == S.import_statement ||
          ck == S.import_from_statement || ts_node_is_error(c) || ck == S.if_statement ||
          ck == S.try_statement || ck == S.with_statement)
        index_statement(c, prefix, cls, depth + 1, TSNode{});
    }
  }
}

bool Builder::has_decorator(TSNode decorated, std::string_view name) {
  if (ts_node_is_null(decorated)) return false;
  for (TSNode d : named(decorated)) {
    if (sym(d) != S.decorator) continue;
    std::string_view t = text(d);
    if (t.find(name) != std::string_view::npos) return true;
  }
  return false;
}

int Builder::find_method(int cls, std::string_view name, int depth) {
  if (cls < 0 || depth > 4) return -1;
  auto it = classes_[cls].methods.find(name);
  if (it != classes_[cls].methods.end()) return it->second;
  for (std::string_view base : classes_[cls].bases) {
    auto b = class_by_name_.find(base);
    if (b != class_by_name_.end() && b->second != cls) {
      int m = find_method(b->second, name, depth + 1);
      if (m >= 0) return m;
    }
  }
  return -1;
}

// ------------------------------------------------------------------ modules and class facts

int Builder::module_from_expr(TSNode e, int depth) {
  e = unparen(e);
  if (depth > 8 || ts_node_is_null(e) || sym(e) != S.call) return -1;
  TSNode fn = field(e, S.f_function);
  std::string cls;
  int local = -1;
  if (sym(fn) == S.identifier && class_by_name_.count(text(fn)) &&
      !(st_ && st_->scope && st_->scope->vars.count(text(fn)))) {
    local = class_by_name_[text(fn)];
    cls = std::string(text(fn));
  } else {
    cls = canonical(fn);
    if (cls.empty() || !is_class_name(cls)) return -1;
  }
  ModuleDesc d;
  d.cls = cls;
  d.ctor = e;
  d.local_class = local;
  auto args = named(field(e, S.f_arguments));
  if (cls == "torch.nn.Sequential") {
    for (TSNode a : args) {
      int m = module_from_expr(a, depth + 1);
      if (m >= 0) d.items.push_back(m);
    }
  } else if (cls == "torch.nn.ModuleList" && !args.empty()) {
    TSNode list = unparen(args[0]);
    if (sym(list) == S.list) {
      for (TSNode a : named(list)) {
        int m = module_from_expr(a, depth + 1);
        if (m >= 0) d.items.push_back(m);
      }
    } else if (sym(list) == S.list_comprehension) {
      d.element = module_from_expr(field(list, S.f_body), depth + 1);
    }
  } else if (cls == "torch.nn.ModuleDict" && !args.empty()) {
    TSNode dict = unparen(args[0]);
    if (sym(dict) == S.call && text(field(dict, S.f_function)) == "dict") {
      for (TSNode kwa : named(field(dict, S.f_arguments))) {
        if (sym(kwa) != S.keyword_argument) continue;
        int m = module_from_expr(field(kwa, S.f_value), depth + 1);
        if (m >= 0) d.members.emplace_back(std::string(text(field(kwa, S.f_name))), m);
      }
    } else if (sym(dict) == S.dictionary) {
      for (TSNode p : named(dict)) {
        if (sym(p) != S.pair) continue;
        std::string_view key = text(field(p, S.f_key));
        if (key.size() >= 2 && (key.front() == '"' || key.front() == '\'')) key = key.substr(1, key.size() - 2);
        int m = module_from_expr(field(p, S.f_value), depth + 1);
        if (m >= 0) d.members.emplace_back(std::string(key), m);
      }
    }
  }
  modules_.push_back(std::move(d));
  return static_cast<int>(modules_.size()) - 1;
}

bool Builder::static_scalar(TSNode e, int depth) {
  e = unparen(e);
  if (ts_node_is_null(e) || depth > 16) return false;
  TSSymbol k = sym(e);
  if (k == S.integer || k == S.float_) return true;
  if (k == S.identifier) return is_scalar_name(text(e));
  if (k == S.attribute) {
    std::vector<std::string_view> parts;
    if (!dotted(e, parts)) return false;
    return is_config_root(parts[parts.size() >= 2 ? parts.size() - 2 : 0]) || is_scalar_name(parts.back()) ||
           (alias(parts[0]) && (*alias(parts[0]) == "math" || *alias(parts[0]) == "numpy"));
  }
  if (k == S.binary_operator) {
    return static_scalar(field(e, S.f_left), depth + 1) || static_scalar(field(e, S.f_right), depth + 1);
  }
  if (k == S.unary_operator) return static_scalar(field(e, S.f_argument), depth + 1);
  if (k == S.call) {
    std::string c = canonical(field(e, S.f_function));
    std::string_view f = text(field(e, S.f_function));
    return c.rfind("math.", 0) == 0 || c.rfind("numpy.", 0) == 0 || f == "float" || f == "int";
  }
  return false;
}

bool Builder::mentions_sqrt(std::string_view t) {
  auto has = [&](std::string_view s) { return t.find(s) != std::string_view::npos; };
  return has("sqrt") || has("** -0.5") || has("**-0.5") || has("** 0.5") || has("**0.5") ||
         has("** (-0.5)") || has("**(-0.5)");
}

bool Builder::mentions_causal(std::string_view t) {
  return t.find("tril") != std::string_view::npos || t.find("triu") != std::string_view::npos;
}

void Builder::class_facts(int cls, int depth) {
  ClassInfo& c = classes_[cls];
  if (c.facts_ready || depth > 4) return;
  c.facts_ready = true;
  for (std::string_view base : c.bases) {
    auto b = class_by_name_.find(base);
    if (b != class_by_name_.end() && b->second != cls) {
      class_facts(b->second, depth + 1);
      for (const auto& f : classes_[b->second].facts) classes_[cls].facts.insert(f);
    }
  }
  auto init = classes_[cls].methods.find("__init__");
  if (init == classes_[cls].methods.end()) return;
  std::vector<std::string_view> causal_locals;
  scan_init(field(functions_[init->second].def, S.f_body), cls, causal_locals, 0);
}

void Builder::scan_init(
    TSNode block, int cls, std::vector<std::string_view>& causal_locals, int depth) {
  if (depth > 16) return;
  for (TSNode s : named(block)) {
    TSSymbol k = sym(s);
    if (k == S.if_statement || k == S.for_statement || k == S.with_statement || k == S.try_statement ||
        k == S.else_clause || k == S.elif_clause || k == S.block || k == S.except_clause) {
      scan_init(s, cls, causal_locals, depth + 1);
      continue;
    }
    if (k != S.expression_statement) continue;
    TSNode e = ts_node_named_child(s, 0);
    if (sym(e) == S.assignment) {
      TSNode left = field(e, S.f_left), right = field(e, S.f_right);
      if (ts_node_is_null(right)) continue;
      if (sym(left) == S.identifier) {
        if (mentions_causal(text(right))) causal_locals.push_back(text(left));
        continue;
      }
      std::vector<std::string_view> parts;
      if (!dotted(left, parts) || parts.size() != 2 || parts[0] != "self") continue;
      AttrFact f;
      int m = module_from_expr(right);
      if (m >= 0) {
        f.kind = AttrFact::kModule;
        f.module = m;
      } else if (mentions_causal(text(right)) || is_causal_local(text(right), causal_locals) ||
                 calls_causal_helper(right)) {
        f.kind = AttrFact::kCausal;
      } else if (static_scalar(right)) {
        f.kind = AttrFact::kScalar;
        f.sqrt_like = mentions_sqrt(text(right));
        f.literal = number(right);
      } else {
        continue;
      }
      classes_[cls].facts[parts[1]] = f;
    } else if (sym(e) == S.call) {
      std::vector<std::string_view> parts;
      if (!dotted(field(e, S.f_function), parts) || parts.size() != 2 || parts[0] != "self" ||
          parts[1] != "register_buffer")
        continue;
      auto args = named(field(e, S.f_arguments));
      if (args.size() < 2 || sym(args[0]) != S.string) continue;
      std::string_view name = text(args[0]);
      if (name.size() < 2) continue;
      name = name.substr(1, name.size() - 2);
      if (mentions_causal(text(args[1])) || is_causal_local(text(args[1]), causal_locals) ||
          calls_causal_helper(args[1]))
        classes_[cls].facts[name] = AttrFact{AttrFact::kCausal, -1, false};
    }
  }
}

bool Builder::calls_causal_helper(TSNode e) {
  e = unparen(e);
  if (sym(e) != S.call) return false;
  TSNode fn = field(e, S.f_function);
  if (sym(fn) != S.identifier) return false;
  auto it = function_by_name_.find(std::string(text(fn)));
  return it != function_by_name_.end() && mentions_causal(text(functions_[it->second].def));
}

bool Builder::is_causal_local(std::string_view t, const std::vector<std::string_view>& locals) {
  return std::find(locals.begin(), locals.end(), t) != locals.end();
}

}  // namespace mlsem::python::detail
