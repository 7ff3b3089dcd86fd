// The report schema's `context_kind` enum lists exactly the context kinds the engine
// knows, so a new kind cannot produce reports the schema rejects.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "engine/engine.h"

namespace mlsem {
namespace {

TEST(ContextKinds, SchemaEnumMatchesTheEngine) {
  std::ifstream in(std::string(MLSEM_SOURCE_DIR) + "/docs/schema/report.schema.json");
  ASSERT_TRUE(in) << "docs/schema/report.schema.json not found";
  nlohmann::json schema = nlohmann::json::parse(in);
  std::set<std::string> in_schema;
  bool null_allowed = false;
  bool found = false;
  // The enum sits under some definition's properties.context_kind; find it wherever it is.
  std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& j) {
    if (j.is_object()) {
      if (auto it = j.find("context_kind"); it != j.end() && it->is_object() && it->contains("enum")) {
        found = true;
        for (const auto& v : (*it)["enum"]) {
          if (v.is_null()) null_allowed = true;
          else in_schema.insert(v.get<std::string>());
        }
      }
      for (const auto& [k, v] : j.items()) walk(v);
    } else if (j.is_array()) {
      for (const auto& v : j) walk(v);
    }
  };
  walk(schema);
  ASSERT_TRUE(found) << "no context_kind enum in the schema";
  EXPECT_TRUE(null_allowed);
  std::set<std::string> engine(std::begin(kContextKinds), std::end(kContextKinds));
  EXPECT_EQ(in_schema, engine);
}

}  // namespace
}  // namespace mlsem
