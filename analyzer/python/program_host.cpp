// int()/float() of a Python number, not a tensor: the values a name or a `self` attribute
// is assigned in the file (a config read, a literal, a number parameter), for the host-sync
// facts of program.cpp. Internal to analyzer/python.
#include <string>
#include <string_view>
#include <vector>

#include "python/names.h"
#include "python/program_util.h"

namespace mlsem::python::program {
namespace {

// A dotted chain of identifiers (`self._clip`, `cfg.training.lr`) split into its parts;
// false for anything else (a call, a subscript).
bool dotted_parts(const Syntax& S, const SourceFile& f, TSNode n, std::vector<std::string_view>& parts) {
  n = unparen(S, n);
  if (ts_node_is_null(n)) return false;
  if (ts_node_symbol(n) == S.identifier) {
    parts.push_back(text_of(n, f.text));
    return true;
  }
  if (ts_node_symbol(n) != S.attribute || !dotted_parts(S, f, field(n, S.f_object), parts)) return false;
  parts.push_back(text_of(field(n, S.f_attribute), f.text));
  return true;
}

// A chain read from a configuration: a part before the last is a config root
// (`cfg.clip`, `self.config.lr`, `cfg.training`), or it reads the environment.
bool config_chain(const std::vector<std::string_view>& parts) {
  if (parts.size() >= 2 && parts[0] == "os" && parts[1] == "environ") return true;
  for (size_t i = 0; i + 1 < parts.size(); ++i)
    if (is_config_root(parts[i])) return true;
  return false;
}

// An annotation naming a Python number (`float`, `Optional[float]`, `int | None`,
// `numbers.Number`), not a tensor.
bool number_type(std::string_view t) {
  if (contains(t, "Tensor")) return false;
  size_t i = 0;
  while (i < t.size()) {
    size_t j = i;
    while (j < t.size() && word_byte(t[j])) ++j;
    std::string_view w = t.substr(i, j - i);
    if (w == "int" || w == "float" || w == "bool" || w == "Number") return true;
    i = j == i ? i + 1 : j;
  }
  return false;
}

// Parameter `name` of function definition `def`: a number by its annotation
// (`clip: float`, `Optional[float]`) or its default (a number literal or None).
bool number_parameter(const Syntax& S, const SourceFile& f, TSNode def, std::string_view name) {
  if (ts_node_is_null(def)) return false;
  for (TSNode p : named_children(field(def, S.f_parameters), S.comment)) {
    TSSymbol k = ts_node_symbol(p);
    TSNode id = k == S.identifier ? p : field(p, S.f_name);
    if (k == S.typed_parameter && ts_node_named_child_count(p) > 0) id = ts_node_named_child(p, 0);
    if (ts_node_is_null(id) || text_of(id, f.text) != name) continue;
    TSNode type = field(p, S.f_type), value = unparen(S, field(p, S.f_value));
    if (!ts_node_is_null(type)) return number_type(text_of(type, f.text));
    if (ts_node_is_null(value)) return false;
    if (ts_node_symbol(value) == S.unary_operator) value = unparen(S, field(value, S.f_argument));
    TSSymbol v = ts_node_symbol(value);
    return v == S.integer || v == S.float_ || v == S.none || v == S.true_ || v == S.false_;
  }
  return false;
}

// Whether an expression assigned to a name is a Python number or other config value, not
// a tensor: a literal, a config read (`cfg.get("clip", None)`, `cfg.training.clip`,
// `args.lr`, `config["x"]`, `getattr(args, "x", 1.0)`, `os.environ[...]`), int()/float()/
// bool()/len() of anything (already on the host), a parameter of the enclosing function
// that is a number by its annotation or default, and arithmetic or conditionals of those.
bool config_value(const Syntax& S, const SourceFile& f, TSNode e, int depth = 0) {
  e = unparen(S, e);
  if (ts_node_is_null(e) || depth > 8) return false;
  TSSymbol k = ts_node_symbol(e);
  if (k == S.integer || k == S.float_ || k == S.string || k == S.concatenated_string || k == S.true_ ||
      k == S.false_ || k == S.none)
    return true;
  if (k == S.unary_operator) return config_value(S, f, field(e, S.f_argument), depth + 1);
  if (k == S.binary_operator || k == S.boolean_operator)
    return config_value(S, f, field(e, S.f_left), depth + 1) && config_value(S, f, field(e, S.f_right), depth + 1);
  if (k == S.conditional_expression) {  // a if cond else b
    std::vector<TSNode> c = named_children(e, S.comment);
    return c.size() == 3 && config_value(S, f, c[0], depth + 1) && config_value(S, f, c[2], depth + 1);
  }
  std::vector<std::string_view> parts;
  if (k == S.identifier) return number_parameter(S, f, enclosing(e, S.function_definition), text_of(e, f.text));
  if (k == S.attribute) return dotted_parts(S, f, e, parts) && config_chain(parts);
  if (k == S.subscript) {  // cfg["clip"], os.environ["X"]
    if (!dotted_parts(S, f, field(e, S.f_value), parts)) return false;
    parts.push_back({});
    return config_chain(parts);
  }
  if (k == S.call) {
    TSNode fn = field(e, S.f_function);
    if (!dotted_parts(S, f, fn, parts)) return false;
    std::string_view callee = text_of(fn, f.text);
    if (callee == "int" || callee == "float" || callee == "bool" || callee == "len" || callee == "str" ||
        callee == "os.getenv")
      return true;
    if (callee == "getattr") {  // getattr(args, "clip", 1.0)
      std::vector<TSNode> args = named_children(field(e, S.f_arguments), S.comment);
      std::vector<std::string_view> obj;
      if (args.empty() || !dotted_parts(S, f, args[0], obj)) return false;
      obj.push_back({});
      return config_chain(obj);
    }
    // cfg.get("clip_grad_norm", None), cfg.training.get(...), self.config.pop(...)
    return (parts.back() == "get" || parts.back() == "pop" || parts.back() == "getint" ||
            parts.back() == "getfloat") &&
           config_chain(parts);
  }
  return false;
}

// The values assigned to `self.<attr>` (`self` as spelled) within `scope`, and to `attr`
// as a class-level field of a class in it (`clip: float = 1.0`). A target that unpacks
// (`self.a, self.b = f()`) or a name the class registers as a buffer or parameter
// (`register_buffer("attr", ...)`, `setattr(self, "attr", ...)`) gives a null value: not
// known to be a number.
void attribute_values(const Syntax& S, const SourceFile& f, TSNode scope, std::string_view self, std::string_view attr,
                      std::vector<TSNode>& values) {
  uint32_t from = ts_node_start_byte(scope), to = ts_node_end_byte(scope);
  for (TSNode id : identifiers_named(scope, f.text, attr, S.identifier, from, to)) {
    TSNode a = parent_of(id);
    if (ts_node_is_null(a)) continue;
    TSNode target = id;
    if (ts_node_symbol(a) == S.attribute) {
      if (!ts_node_eq(field(a, S.f_attribute), id) || text_of(field(a, S.f_object), f.text) != self) continue;
      target = a;
    } else if (ts_node_symbol(a) == S.assignment && ts_node_eq(field(a, S.f_left), id)) {
      // `attr = ...` directly in a class body (a dataclass or class-level field).
      TSNode stmt = parent_of(a), body = ts_node_is_null(stmt) ? stmt : parent_of(stmt);
      TSNode cls = ts_node_is_null(body) ? body : parent_of(body);
      if (ts_node_is_null(cls) || ts_node_symbol(cls) != S.class_definition) continue;
      TSNode type = field(a, S.f_type), right = field(a, S.f_right);
      if (!ts_node_is_null(right)) values.push_back(right);
      else if (!ts_node_is_null(type) && !number_type(text_of(type, f.text))) values.push_back(TSNode{});
      continue;
    } else {
      continue;
    }
    TSNode p = parent_of(target);
    if (ts_node_is_null(p)) continue;
    TSSymbol k = ts_node_symbol(p);
    if ((k == S.assignment || k == S.augmented_assignment) && ts_node_eq(field(p, S.f_left), target)) {
      values.push_back(field(p, S.f_right));
    } else if (k == S.pattern_list || k == S.tuple_pattern || k == S.list_pattern || k == S.tuple ||
               k == S.expression_list) {
      values.push_back(TSNode{});  // unpacked: unknown
    }
  }
  // Registered under its name as a string: a buffer or a parameter.
  for (std::string_view q : {"\"", "'"}) {
    std::string quoted = std::string(q) + std::string(attr) + std::string(q);
    if (contains(f.text.substr(from, to - from), quoted)) values.push_back(TSNode{});
  }
}

// The values assigned to the plain name `name` anywhere in the file. A binding that is
// not an assignment (a loop or comprehension target, `with ... as name`, unpacking, a
// parameter, a lambda's) gives a null value: not known to be a number.
void name_values(const Syntax& S, const SourceFile& f, TSNode root, std::string_view name, std::vector<TSNode>& values) {
  for (TSNode id : identifiers_named(root, f.text, name, S.identifier)) {
    TSNode p = parent_of(id);
    if (ts_node_is_null(p)) continue;
    TSSymbol k = ts_node_symbol(p);
    std::string_view type = ts_node_type(p);
    if ((k == S.assignment || k == S.augmented_assignment) && ts_node_eq(field(p, S.f_left), id)) {
      values.push_back(field(p, S.f_right));
    } else if (type == "for_in_clause" || type == "lambda_parameters") {  // `int(i) for i in batch["index"]`
      if (type == "lambda_parameters" || ts_node_eq(field(p, S.f_left), id)) values.push_back(TSNode{});
    } else if (k == S.pattern_list || k == S.tuple_pattern || k == S.list_pattern || k == S.tuple ||
               k == S.expression_list || k == S.for_statement || k == S.as_pattern_target ||
               k == S.parameters || k == S.typed_parameter || k == S.default_parameter ||
               k == S.typed_default_parameter || k == S.named_expression) {
      if (k == S.for_statement && !ts_node_eq(field(p, S.f_left), id)) continue;
      if ((k == S.default_parameter || k == S.typed_default_parameter) && !ts_node_eq(field(p, S.f_name), id)) continue;
      if (k == S.named_expression && !ts_node_eq(field(p, S.f_name), id)) continue;
      values.push_back(TSNode{});
    }
  }
}

// The first parameter of the method holding `n` (`self`), or empty outside a method.
std::string_view self_name(const Syntax& S, const SourceFile& f, TSNode n) {
  TSNode def = enclosing(n, S.function_definition);
  if (ts_node_is_null(def)) return {};
  TSNode body = parent_of(def);
  if (!ts_node_is_null(body) && ts_node_symbol(body) == S.decorated_definition) body = parent_of(body);
  TSNode cls = ts_node_is_null(body) ? body : parent_of(body);
  if (ts_node_is_null(cls) || ts_node_symbol(cls) != S.class_definition) return {};
  std::vector<TSNode> params = named_children(field(def, S.f_parameters), S.comment);
  if (params.empty()) return {};
  TSNode first = params[0];
  if (ts_node_symbol(first) != S.identifier) first = ts_node_named_child(first, 0);
  return ts_node_is_null(first) || ts_node_symbol(first) != S.identifier ? std::string_view{} : text_of(first, f.text);
}

}  // namespace

// int(x)/float(x) whose operand the lowering left as a name it could not trace to a
// tensor (an attribute of `self` not set in __init__ from a number, a global) or as a
// parameter of the analyzed function: a host value when every assignment to it in the
// file is a config value (`self._clip_grad_norm = cfg.get("clip_grad_norm", None)`), or
// when the file assigns it nowhere (its origin is unknown: no sign of a tensor), and for
// a parameter when it is not annotated as a tensor. A tensor's value comes from a call,
// an op or a model, which the lowering traces (int(x.sum()), float(loss)).
bool host_number(const Syntax& S, const SourceFile& f, TSNode root, const ir::Function& fn, const ir::Node& sync) {
  auto m = sync.attrs.find("method");
  if (m == sync.attrs.end() || !std::get_if<std::string>(&m->second)) return false;
  const std::string& method = std::get<std::string>(m->second);
  if ((method != "float" && method != "int") || sync.inputs.size() != 1 || sync.inputs[0] >= fn.nodes.size())
    return false;
  const ir::Node& x = fn.nodes[sync.inputs[0]];
  if (x.op != "name" && x.op != "input") return false;
  TSNode call = ts_node_descendant_for_byte_range(root, sync.range.begin_byte, sync.range.end_byte);
  if (ts_node_is_null(call) || ts_node_symbol(call) != S.call) return false;
  std::vector<TSNode> args = named_children(field(call, S.f_arguments), S.comment);
  if (args.size() != 1) return false;
  std::vector<std::string_view> parts;
  if (!dotted_parts(S, f, args[0], parts)) return false;
  if (x.op == "input") {
    auto t = x.attrs.find("type");
    return parts.size() == 1 &&
           (t == x.attrs.end() || !std::get_if<std::string>(&t->second) || !contains(std::get<std::string>(t->second), "Tensor"));
  }
  std::vector<TSNode> values;
  if (parts.size() == 1) {
    name_values(S, f, root, parts[0], values);
  } else if (parts.size() == 2 && self_name(S, f, call) == parts[0]) {
    TSNode cls = enclosing(call, S.class_definition);
    if (!ts_node_is_null(cls)) attribute_values(S, f, cls, parts[0], parts[1], values);
    if (values.empty()) attribute_values(S, f, root, parts[0], parts[1], values);  // set by a base class
  } else {
    return config_chain(parts);  // `outputs.loss`: an attribute of some value, maybe a tensor
  }
  for (TSNode v : values)
    if (!config_value(S, f, v)) return false;
  return true;
}

}  // namespace mlsem::python::program
