// docs/rules/<ID>.md is what `mlsem explain --format markdown ID` prints: a rule edited
// without re-running scripts/rule_docs.sh fails here, so editors never link a stale page.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "engine/engine.h"
#include "mlsem_cli.h"

namespace mlsem {
namespace {

using test_support::read_text;
using test_support::run_mlsem;

TEST(RuleDocs, EveryPageIsWhatExplainPrints) {
  std::vector<FileError> errors;
  std::optional<Engine> engine = Engine::load(MLSEM_SOURCE_DIR, errors);
  ASSERT_TRUE(engine.has_value());
  std::filesystem::path dir = std::filesystem::path(MLSEM_SOURCE_DIR) / "docs" / "rules";
  for (const Rule& rule : engine->rules()) {
    auto run = run_mlsem("explain --format markdown --data . " + rule.id, MLSEM_SOURCE_DIR);
    ASSERT_EQ(run.code, 0) << rule.id << ": " << run.err;
    EXPECT_EQ(read_text((dir / (rule.id + ".md")).string()), run.out)
        << "docs/rules/" << rule.id << ".md is stale: run bash scripts/rule_docs.sh";
  }
}

}  // namespace
}  // namespace mlsem
