// Helpers for engine tests: hand-built IR (TempDir is in temp_dir.h).
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>
#include <unistd.h>

#include "ir/ir.h"
#include "temp_dir.h"

namespace mlsem::test_support {

// Builds one function's IR node by node; each node is placed on its own line so
// ranges are distinct and predictable (node i spans line i+1).
struct FunctionBuilder {
  ir::Function fn;
  FunctionBuilder() {
    fn.name = "f";
    fn.regions.push_back({"function", 0, {}, {}});
  }
  ir::NodeId add(std::string op, std::vector<ir::NodeId> inputs = {}, std::map<std::string, ir::Attr> attrs = {},
                 uint32_t region = 0) {
    ir::Node n;
    n.op = std::move(op);
    n.inputs = std::move(inputs);
    n.attrs = std::move(attrs);
    auto line = static_cast<uint32_t>(fn.nodes.size() + 1);
    n.range = {{line, 1}, {line, 10}, line * 100, line * 100 + 10};
    n.region = region;
    fn.nodes.push_back(std::move(n));
    return static_cast<ir::NodeId>(fn.nodes.size() - 1);
  }
  uint32_t region(std::string kind, std::map<std::string, ir::Attr> attrs = {}, uint32_t parent = 0) {
    fn.regions.push_back({std::move(kind), parent, std::move(attrs), {}});
    return static_cast<uint32_t>(fn.regions.size() - 1);
  }
};


}  // namespace mlsem::test_support
