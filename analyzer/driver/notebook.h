// Jupyter notebooks (.ipynb): the code cells, in order, as one Python program.
#pragma once

#include <optional>
#include <string>

#include "core/finding.h"
#include "driver/driver.h"

namespace mlsem::driver {

// Builds the program from the notebook JSON in `notebook.text`: every code cell's
// lines, in order; IPython magics (`%...`, a `%%` cell), shell lines (`!...`,
// `x = !...`) and help lines (`x?`) become `pass` at their indentation so that lines
// keep their numbers. `index` maps the program's lines back to cells. A notebook that
// is not valid JSON or not nbformat 4 gives an error.
std::optional<FileError> notebook_program(const SourceFile& notebook, SourceFile& program, NotebookIndex& index);

inline bool is_notebook(std::string_view path) { return path.ends_with(".ipynb"); }

}  // namespace mlsem::driver
