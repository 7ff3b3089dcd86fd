// Learning paths and the concept hierarchy as text, Markdown, JSON and Graphviz DOT.
#pragma once

#include <string>

#include "kernels/catalog.h"
#include "learn/curriculum.h"
#include "learn/path.h"

namespace mlsem::learn {

std::string path_text(const LearningPath& path);
std::string path_markdown(const LearningPath& path);
// {"targets", "total_minutes", "findings", "files", "fundamentals",
//  "steps": [{"step", "concept", "title", "stage", "minutes", "prerequisites", "needed_by",
//             "why": [finding refs], "levels", "kernels": [paths], "lessons": [kernel details],
//             "samples", "explanation", "checkpoint"}]}
std::string path_json(const LearningPath& path);
// The whole hierarchy (parents solid, prerequisites dashed) with the path's concepts
// numbered and coloured by stage.
std::string path_dot(const LearningPath& path, const Curriculum& curriculum);

// `mlsem concepts`: every concept under its parents (a concept with several parents is
// printed in full under the first and referred to under the others).
std::string concepts_tree(const Curriculum& curriculum);
// `mlsem concepts ID`: one concept with its parents, children, prerequisites, lessons,
// rules filed under it and measured kernels.
std::string concept_detail(const std::string& id, const Curriculum& curriculum, const Engine& engine,
                           const kernels::Catalog& catalog);
// The hierarchy as DOT; with an id, only that concept, what it needs (transitively),
// and its children.
std::string concepts_dot(const Curriculum& curriculum, const std::string& id = "");

// "library call -> torch.compile" style text of a kernel's measured ladder, the rungs
// that were measured; "" when fewer than two were.
std::string ladder_text(const KernelLesson& lesson, const char* arrow = " -> ");

}  // namespace mlsem::learn
