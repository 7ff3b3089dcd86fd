#include "python/syntax.h"

#include <cstring>

namespace mlsem::python {

const Syntax& Syntax::get() {
  static const Syntax syntax = [] {
    Syntax s;
    const TSLanguage* lang = tree_sitter_python();
    auto kind = [&](TSSymbol& out, const char* name) {
      out = ts_language_symbol_for_name(lang, name, static_cast<uint32_t>(std::strlen(name)), true);
      if (out == 0) s.unresolved.push_back(name);
    };
    auto fld = [&](TSFieldId& out, const char* name) {
      out = ts_language_field_id_for_name(lang, name, static_cast<uint32_t>(std::strlen(name)));
      if (out == 0) s.unresolved.push_back(name);
    };
    kind(s.module, "module");
    kind(s.function_definition, "function_definition");
    kind(s.class_definition, "class_definition");
    kind(s.decorated_definition, "decorated_definition");
    kind(s.decorator, "decorator");
    kind(s.block, "block");
    kind(s.expression_statement, "expression_statement");
    kind(s.assignment, "assignment");
    kind(s.augmented_assignment, "augmented_assignment");
    kind(s.return_statement, "return_statement");
    kind(s.if_statement, "if_statement");
    kind(s.elif_clause, "elif_clause");
    kind(s.else_clause, "else_clause");
    kind(s.for_statement, "for_statement");
    kind(s.while_statement, "while_statement");
    kind(s.with_statement, "with_statement");
    kind(s.with_clause, "with_clause");
    kind(s.with_item, "with_item");
    kind(s.try_statement, "try_statement");
    kind(s.except_clause, "except_clause");
    kind(s.finally_clause, "finally_clause");
    kind(s.match_statement, "match_statement");
    kind(s.case_clause, "case_clause");
    kind(s.import_statement, "import_statement");
    kind(s.import_from_statement, "import_from_statement");
    kind(s.future_import_statement, "future_import_statement");
    kind(s.aliased_import, "aliased_import");
    kind(s.dotted_name, "dotted_name");
    kind(s.relative_import, "relative_import");
    kind(s.wildcard_import, "wildcard_import");
    kind(s.identifier, "identifier");
    kind(s.attribute, "attribute");
    kind(s.call, "call");
    kind(s.argument_list, "argument_list");
    kind(s.keyword_argument, "keyword_argument");
    kind(s.list_splat, "list_splat");
    kind(s.dictionary_splat, "dictionary_splat");
    kind(s.subscript, "subscript");
    kind(s.slice, "slice");
    kind(s.binary_operator, "binary_operator");
    kind(s.unary_operator, "unary_operator");
    kind(s.boolean_operator, "boolean_operator");
    kind(s.not_operator, "not_operator");
    kind(s.comparison_operator, "comparison_operator");
    kind(s.parenthesized_expression, "parenthesized_expression");
    kind(s.tuple, "tuple");
    kind(s.list, "list");
    kind(s.set, "set");
    kind(s.dictionary, "dictionary");
    kind(s.pair, "pair");
    kind(s.expression_list, "expression_list");
    kind(s.pattern_list, "pattern_list");
    kind(s.tuple_pattern, "tuple_pattern");
    kind(s.list_pattern, "list_pattern");
    kind(s.list_splat_pattern, "list_splat_pattern");
    kind(s.integer, "integer");
    kind(s.float_, "float");
    kind(s.string, "string");
    kind(s.concatenated_string, "concatenated_string");
    kind(s.interpolation, "interpolation");
    kind(s.true_, "true");
    kind(s.false_, "false");
    kind(s.none, "none");
    kind(s.ellipsis, "ellipsis");
    kind(s.conditional_expression, "conditional_expression");
    kind(s.named_expression, "named_expression");
    kind(s.lambda, "lambda");
    kind(s.list_comprehension, "list_comprehension");
    kind(s.set_comprehension, "set_comprehension");
    kind(s.dictionary_comprehension, "dictionary_comprehension");
    kind(s.generator_expression, "generator_expression");
    kind(s.parameters, "parameters");
    kind(s.default_parameter, "default_parameter");
    kind(s.typed_parameter, "typed_parameter");
    kind(s.typed_default_parameter, "typed_default_parameter");
    kind(s.as_pattern, "as_pattern");
    kind(s.as_pattern_target, "as_pattern_target");
    kind(s.comment, "comment");
    kind(s.await_, "await");
    kind(s.type, "type");
    fld(s.f_name, "name");
    fld(s.f_body, "body");
    fld(s.f_parameters, "parameters");
    fld(s.f_left, "left");
    fld(s.f_right, "right");
    fld(s.f_operator, "operator");
    fld(s.f_function, "function");
    fld(s.f_arguments, "arguments");
    fld(s.f_object, "object");
    fld(s.f_attribute, "attribute");
    fld(s.f_value, "value");
    fld(s.f_subscript, "subscript");
    fld(s.f_condition, "condition");
    fld(s.f_consequence, "consequence");
    fld(s.f_alternative, "alternative");
    fld(s.f_argument, "argument");
    fld(s.f_definition, "definition");
    fld(s.f_module_name, "module_name");
    fld(s.f_alias, "alias");
    fld(s.f_type, "type");
    fld(s.f_superclasses, "superclasses");
    fld(s.f_key, "key");
    fld(s.f_operators, "operators");
    return s;
  }();
  return syntax;
}

}  // namespace mlsem::python
