// Findings in LSP's vocabulary: Diagnostic objects, hover text, TextEdits.
#pragma once

#include <optional>
#include <string>

#include "core/finding.h"
#include "engine/engine.h"
#include "lsp/actions.h"
#include "lsp/text.h"
#include "lsp/transport.h"

namespace mlsem::lsp {

// Where rule documentation is published by default: the repository's docs/rules/,
// one page per rule (docs/rules/<ID>.md, written by `mlsem explain --format markdown`),
// under the project's home page (CMake's MLSEM_HOMEPAGE_URL). A client can point
// elsewhere (a mirror, a pinned tag) with the `docsBaseUrl` initialization option.
std::string default_docs_base();

// The documentation URL of a rule: base + "<ID>.md" ("" for an unknown rule).
std::string rule_docs_url(const Engine& engine, const std::string& rule_id, std::string_view base);

json to_json(const LspPosition& p);
json to_json(const LspRange& r);
// An Edit as an LSP TextEdit.
json text_edit(const Edit& edit, const Text& text, Encoding e);

// The Diagnostic for a finding: range, severity, code, codeDescription, source,
// message (with the confidence), relatedInformation (the evidence seen, each where
// it was seen) and data: what a code action needs to find the finding again and
// offer its fixes (rule, concept, confidence, the rule's fix text).
json to_diagnostic(const Finding& f, const Engine& engine, const Text& text, Encoding e, const std::string& uri,
                   std::string_view docs_base);

// Markdown for a hover on a finding: what it is, the concept, the evidence, the fix,
// the reference kernel's measured speedup and where to go next in the concepts.
std::string hover_markdown(const Finding& f, const Engine& engine, std::string_view docs_base);

}  // namespace mlsem::lsp
