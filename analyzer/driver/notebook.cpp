#include "driver/notebook.h"

#include <nlohmann/json.hpp>

namespace mlsem::driver {
namespace {

size_t indentation(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  return i;
}

// IPython syntax that is not Python: line magics, shell escapes (also assigned:
// `files = !ls`), help (`obj?`, `?obj`).
bool is_ipython_line(std::string_view line) {
  std::string_view body = line.substr(indentation(line));
  while (!body.empty() && (body.back() == ' ' || body.back() == '\r')) body.remove_suffix(1);
  if (body.empty() || body[0] == '#') return false;
  if (body[0] == '%' || body[0] == '!' || body[0] == '?') return true;
  if (body.back() == '?' && body.find('#') == std::string_view::npos) return true;
  size_t eq = body.find('=');
  if (eq != std::string_view::npos && eq + 1 < body.size() && body[eq + 1] != '=') {
    std::string_view rhs = body.substr(eq + 1);
    rhs.remove_prefix(std::min(rhs.size(), indentation(rhs)));
    if (!rhs.empty() && (rhs[0] == '!' || (rhs[0] == '%' && rhs.size() > 1 && std::isalpha(static_cast<unsigned char>(rhs[1])))))
      return true;
  }
  return false;
}

std::string cell_source(const nlohmann::json& source) {
  if (source.is_string()) return source.get<std::string>();
  std::string text;
  if (source.is_array())
    for (const auto& part : source)
      if (part.is_string()) text += part.get<std::string>();
  return text;
}

}  // namespace

std::optional<FileError> notebook_program(const SourceFile& notebook, SourceFile& program, NotebookIndex& index) {
  nlohmann::json root = nlohmann::json::parse(notebook.text, nullptr, false);
  if (root.is_discarded() || !root.is_object())
    return FileError{notebook.path, "not a Jupyter notebook: the file is not valid JSON, not analyzed"};
  auto cells = root.find("cells");
  if (cells == root.end() || !cells->is_array())
    return FileError{notebook.path, "not a Jupyter notebook (nbformat 4): no \"cells\" list, not analyzed"};
  if (auto language = root["metadata"]["language_info"]["name"]; language.is_string() && language != "python")
    return FileError{notebook.path, "notebook language is " + language.get<std::string>() + ", not Python; not analyzed"};
  program.path = notebook.path;
  program.text.clear();
  index = {};
  uint32_t cell_number = 0;
  for (const auto& cell : *cells) {
    ++cell_number;
    if (!cell.is_object() || cell.value("cell_type", "") != "code") continue;
    std::string source = cell_source(cell.value("source", nlohmann::json()));
    bool cell_magic = source.starts_with("%%");
    uint32_t line_number = 0;
    size_t start = 0;
    while (start < source.size()) {
      size_t end = source.find('\n', start);
      if (end == std::string::npos) end = source.size();
      std::string_view line(source.data() + start, end - start);
      ++line_number;
      if (cell_magic || is_ipython_line(line))
        program.text += std::string(line.substr(0, indentation(line))) + (cell_magic ? "" : "pass");
      else
        program.text += line;
      program.text += '\n';
      index.cell.push_back(cell_number);
      index.line.push_back(line_number);
      start = end + 1;
    }
  }
  return std::nullopt;
}

}  // namespace mlsem::driver
