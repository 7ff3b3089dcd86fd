// Whole-kernel facts, computed once a function's body has been walked: pointwise and
// GEMM kernels, vectorizable scalar stores, parameters read and written, passes over a
// row (multi_pass), and host-side loops that launch; then module-wide shuffle use.
#include "cuda/lowering.h"

#include <algorithm>
#include <set>

namespace mlsem::cuda::detail {
namespace {

// Whether region `inner` is `outer` or nested in it (region 0, the body, holds all).
bool region_within(const ir::Function& fn, uint32_t inner, uint32_t outer) {
  for (uint32_t r = inner;; r = fn.regions[r].parent) {
    if (r == outer) return true;
    if (r == 0) return false;
  }
}

}  // namespace

void FunctionLowering::finish_device() {
  bool uses_shared = false, pointwise = fd_->hasAttr<clang::CUDAGlobalAttr>(), any_global_store = false;
  int64_t scalar_loads = 0;
  for (const auto& acc : accesses_) {
    const auto& n = fn_.nodes[acc.node];
    if (acc.ptr.space == "shared") uses_shared = true;
    if (acc.ptr.space != "global") continue;
    if (acc.store) {
      any_global_store = true;
      auto ls = n.attr("lane_stride");
      if (!ls || std::get<int64_t>(*ls) != 1) pointwise = false;
    } else {
      if (std::get<int64_t>(n.attrs.at("vector_width")) == 1) ++scalar_loads;
      // A strided gather (the top element of every block of a scan) is not an
      // element-wise map, nor is a read at coordinates computed in floating point (an
      // upscale's nearest or bilinear taps): wider loads do not fit it.
      if (const auto* u = n.attr("uncoalesced"); u && std::get<bool>(*u)) pointwise = false;
      if (n.attr("float_coordinate")) pointwise = false;
    }
  }
  // Pointwise: each thread maps its elements independently; any reduction (an
  // accumulator, a running max, a shuffle) makes it a row or block kernel.
  for (const auto& l : loops_)
    if ((l.stride_kind != "grid" && l.stride_kind != "block") || l.has_accumulate || l.has_max) pointwise = false;
  if (uses_shuffle_) pointwise = false;
  pointwise = pointwise && any_global_store && !uses_shared && barriers_.empty() && atomics_.empty();
  bool gemm = false;
  for (const auto& n : fn_.nodes) gemm |= n.op == "gemm_loop";
  pointwise = pointwise && !gemm;
  summary_.pointwise = pointwise;
  summary_.gemm = gemm;
  fn_.attrs["uses_shared"] = uses_shared;
  fn_.attrs["uses_shuffle"] = uses_shuffle_;
  fn_.attrs["pointwise"] = pointwise;
  fn_.attrs["gemm"] = gemm;

  // Accesses a thread makes once (outside every loop over the data) in a kernel whose
  // loop over the data also touches global memory: loading a thread's few weights or
  // state values before the loop, or a block reduction after it, costs a small share of
  // the loop's traffic, whatever its layout.
  auto in_data_loop = [&](const Access& a) {
    return std::any_of(a.loops.begin(), a.loops.end(), [&](int l) { return loops_[l].over_data; });
  };
  // The loop's access must move with the thread (a broadcast read of a few scales in a
  // short runtime loop is not the kernel's data).
  bool data_loop = std::any_of(accesses_.begin(), accesses_.end(),
                               [&](const Access& a) {
                                 const auto* t = fn_.nodes[a.node].attr("thread_dependent");
                                 return a.ptr.space == "global" && in_data_loop(a) && t && std::get<bool>(*t);
                               }) ||
                   std::any_of(loops_.begin(), loops_.end(), [](const LoopInfo& l) { return l.over_data && l.passes_global; });
  if (data_loop)
    for (const auto& acc : accesses_)
      if (!in_data_loop(acc)) fn_.nodes[acc.node].attrs["once_beside_data_loop"] = true;

  // A strided sample: x[S*i + c] with a constant lane stride S of 32 or more and every
  // moving term of the offset a multiple of S (a scan reading the top element of each
  // 1024-element block). The kernel reads one element in S of the buffer (fewer than S/2
  // with its sibling accesses at other constant offsets, which x[4*i + 0..3] fills): no
  // layout coalesces the same reads, and they are a small share of the buffer.
  auto constant_term = [](const Poly& p) {
    auto it = p.terms().find(Poly::Monomial{});
    return it == p.terms().end() ? int64_t{0} : it->second;
  };
  for (const auto& acc : accesses_) {
    auto& n = fn_.nodes[acc.node];
    auto ls = num_attr(n, "lane_stride");
    int64_t eb = size_of(acc.ptr.elem);
    if (acc.ptr.space != "global" || !ls || (*ls < 32 && *ls > -32) || eb <= 0) continue;
    int64_t span = (*ls < 0 ? -*ls : *ls) * eb;  // bytes between neighbouring lanes
    Poly moving = acc.ptr.byte_offset - Poly::constant(constant_term(acc.ptr.byte_offset));
    if (moving.is_zero() || moving.content() % span != 0) continue;
    std::set<int64_t> offsets;
    for (const auto& other : accesses_)
      if (other.ptr.name == acc.ptr.name && other.ptr.space == "global") {
        int64_t c = constant_term(other.ptr.byte_offset);
        if (other.ptr.byte_offset - Poly::constant(c) == moving) offsets.insert(((c % span) + span) % span);
      }
    if (2 * static_cast<int64_t>(offsets.size()) * eb < span) n.attrs["strided_sample"] = true;
  }

  bool vectorizable_marked = false;
  for (auto& n : fn_.nodes) {
    if (n.op == "gemm_loop") n.attrs["kernel_uses_shared"] = uses_shared;
    // Scalar stores of a pointwise kernel: 16-byte vectors would move the same bytes
    // in a quarter of the instructions. Marked on the kernel's first such store only:
    // the advice is about the kernel.
    if (n.op == "store" && pointwise && !has_vector_access_ && std::get<std::string>(n.attrs["space"]) == "global") {
      int64_t bytes = std::get<int64_t>(n.attrs["elem_bytes"]);
      auto ls = num_attr(n, "lane_stride");
      bool scalar_unit = (bytes == 4 || bytes == 2) && ls && *ls == 1;
      n.attrs["vectorizable"] = scalar_unit && !vectorizable_marked;
      n.attrs["scalar_loads"] = scalar_loads;
      vectorizable_marked |= scalar_unit;
    }
  }
  // What one thread stores through each parameter (summed by mark_param): none known for a
  // parameter not written, or written only through stores of unknown size.
  for (size_t i = 0; i < summary_.param_store_bytes.size(); ++i)
    if (!summary_.param_written[i] || summary_.param_store_bytes[i] == 0) summary_.param_store_bytes[i] = -1;
  // Parameters: read, written, and what they promise.
  std::map<const clang::ValueDecl*, std::string> reuse = find_reuse();
  for (auto& [decl, idx] : param_index_) {
    auto& n = fn_.nodes[decl_nodes_[decl]];
    n.attrs["read"] = static_cast<bool>(summary_.param_read[idx]);
    n.attrs["written"] = static_cast<bool>(summary_.param_written[idx]);
    auto it = reuse.find(decl);
    n.attrs["reused"] = it != reuse.end();
    if (it != reuse.end()) n.attrs["reuse"] = it->second;
  }
  find_passes();
}

// Global buffers whose elements the kernel reads more than once, where a promise of
// `const __restrict__` pays: "shared" when threads or blocks read the same elements (the
// load's index leaves out a thread or block index the kernel uses elsewhere, w[i] read by
// every row's block), "reread" when one thread reads an element again (two loads at one
// index, or a load in a serial loop that does not move with it). A buffer read once per
// element (out[i] = f(x[i])) gets neither: nothing is left to cache or to keep.
std::map<const clang::ValueDecl*, std::string> FunctionLowering::find_reuse() const {
  static const char* kIndices[] = {"threadIdx.x", "threadIdx.y", "threadIdx.z", "blockIdx.x", "blockIdx.y", "blockIdx.z"};
  auto names = [](const std::string& sym, const char* index) { return sym.find(index) != std::string::npos; };
  std::set<std::string> used;  // the thread and block indices some global access depends on
  for (const auto& acc : accesses_) {
    if (acc.ptr.space != "global") continue;
    for (const auto& sym : acc.ptr.byte_offset.symbols())
      for (const char* index : kIndices)
        if (names(sym, index)) used.insert(index);
  }
  std::set<std::string> known;  // symbols that are not thread- or block-dependent in disguise
  for (const auto& [decl, _] : param_index_) known.insert(decl->getNameAsString());
  for (const auto& l : loops_)
    if (!l.iter.empty()) known.insert(l.iter);
  for (const auto& sym : {"blockDim.x", "blockDim.y", "blockDim.z", "gridDim.x", "gridDim.y", "gridDim.z"}) known.insert(sym);
  std::map<const clang::ValueDecl*, std::string> out;
  std::map<const clang::ValueDecl*, std::vector<const Access*>> loads;
  // A volatile pointee (also through a typedef: `typedef volatile int LatchType;`) is
  // read again on purpose: a flag polled until another thread or the host sets it.
  auto is_volatile = [](const clang::ValueDecl* d) {
    clang::QualType t = d->getType();
    return t->isPointerType() && t->getPointeeType().isVolatileQualified();
  };
  for (const auto& acc : accesses_)
    if (!acc.store && acc.ptr.space == "global" && acc.ptr.decl_ptr && !is_volatile(acc.ptr.decl_ptr))
      loads[acc.ptr.decl_ptr].push_back(&acc);
  // Region `inner` is `outer` or inside it (two loads in the two arms of an if are not
  // both executed).
  auto within = [&](uint32_t inner, uint32_t outer) { return region_within(fn_, inner, outer); };
  for (const auto& [decl, list] : loads) {
    for (size_t i = 0; i < list.size() && !out.count(decl); ++i) {
      const Access& a = *list[i];
      const Poly& off = a.ptr.byte_offset;
      uint32_t ra = fn_.nodes[a.node].region;
      for (size_t j = i + 1; j < list.size(); ++j) {
        uint32_t rb = fn_.nodes[list[j]->node].region;
        if (list[j]->ptr.byte_offset == off && list[j]->node != a.node && (within(ra, rb) || within(rb, ra)))
          out[decl] = "reread";
      }
      if (out.count(decl)) break;
      // An index hidden in an opaque thread-dependent value says nothing either way.
      bool opaque = false;
      std::set<std::string> depends;
      for (const auto& sym : off.symbols()) {
        bool builtin = false;
        for (const char* index : kIndices)
          if (names(sym, index)) depends.insert(index), builtin = true;
        // Only builtins, parameters and loop counts are known not to hide a block or
        // thread index: an opaque term ({...}), a variable set under control flow (v~)
        // or a thread-dependent atom may.
        if (!builtin && !known.count(sym)) opaque = true;
      }
      // A load in a serial loop whose index does not move with it is read again on every
      // iteration, unless the index is a variable the loop itself steps (flat_idx +=
      // features, apex's bias backward): then nothing is known.
      if (!opaque && a.loop >= 0 && loops_[a.loop].stride_kind == "serial" && !loops_[a.loop].iter.empty() &&
          !off.mentions(loops_[a.loop].iter)) {
        out[decl] = "reread";
        break;
      }
      if (off.as_constant()) continue;  // one scalar every thread reads once: the cache has it anyway
      if (region_has(ra, "if", "single_thread")) continue;  // under threadIdx.x == 0: one reader
      if (region_has(ra, "if", "single_block")) continue;   // under blockIdx.x == 0: one block reads it
      // Staged in shared memory (tile[ty][tx] = A[...]): each block reads it once.
      if (const auto* st = fn_.nodes[a.node].attr("staged"); st && std::get<bool>(*st)) continue;
      if (opaque) continue;
      // Elements that vary within the block (with a thread index or a loop), re-read by
      // other threads or blocks; partial[blockIdx.x] is one value per block, a broadcast.
      bool varies = std::any_of(depends.begin(), depends.end(), [](const std::string& d) { return d.starts_with("threadIdx"); });
      for (int l : a.loops) varies |= !loops_[l].iter.empty() && off.mentions(loops_[l].iter);
      if (!varies) continue;
      for (const auto& index : used)
        if (!depends.count(index)) {
          out[decl] = "shared";
          break;
        }
    }
  }
  return out;
}

// Loads of the same row in sibling loops: the kernel makes several passes over
// global memory. Classified as softmax (a max pass, then an exp pass), statistics
// (a sum pass, then a squared-difference pass) or a plain re-read.
void FunctionLowering::find_passes() {
  struct PassLoad { int pass; NodeId node; uint32_t begin; };
  std::map<std::string, std::vector<PassLoad>> by_row;
  for (const auto& acc : accesses_) {
    if (acc.store || acc.ptr.space != "global" || acc.loops.empty()) continue;
    if (const auto* alt = fn_.nodes[acc.node].attr("shared_alternative"); alt && std::get<bool>(*alt)) continue;
    Poly key = acc.ptr.byte_offset;
    int pass = -1;
    // The pass is the innermost loop the index walks; loops around it (rows) stay symbolic.
    for (int l : acc.loops)
      if (!loops_[l].iter.empty() && key.mentions(loops_[l].iter)) pass = l;
    if (pass < 0) continue;
    int depth = 0;
    for (int l : acc.loops) {
      if (l != pass && depth == 0) continue;
      if (!loops_[l].iter.empty())
        key = key.substitute(loops_[l].iter, Poly::symbol("@" + std::to_string(depth)));
      ++depth;
    }
    by_row[acc.ptr.name + "|" + key.text()].push_back({pass, acc.node, fn_.nodes[acc.node].range.begin_byte});
  }
  auto nested = [&](int a, int b) {  // a inside b, or b inside a
    for (int l = a; l >= 0; l = loops_[l].parent) if (l == b) return true;
    for (int l = b; l >= 0; l = loops_[l].parent) if (l == a) return true;
    return false;
  };
  // Loops in the two arms of one if/else: only one of them runs.
  auto exclusive = [&](int a, int b) {
    uint32_t ra = loops_[a].region, rb = loops_[b].region;
    for (const auto& [then_r, else_r] : if_arms_)
      if ((region_within(fn_, ra, then_r) && region_within(fn_, rb, else_r)) ||
          (region_within(fn_, ra, else_r) && region_within(fn_, rb, then_r)))
        return true;
    return false;
  };
  auto feature = [&](int l, bool LoopInfo::*f) {
    // Features of nested loops were propagated up when they were seen.
    return loops_[l].*f;
  };
  std::set<std::string> reported_params;
  for (auto& [key, loads] : by_row) {
    std::sort(loads.begin(), loads.end(), [](const auto& a, const auto& b) { return a.begin < b.begin; });
    std::vector<PassLoad> passes;  // first load of each sibling pass, in source order
    for (const auto& ld : loads) {
      bool separate = true;
      for (const auto& p : passes) separate &= !nested(p.pass, ld.pass) && !exclusive(p.pass, ld.pass);
      if (separate) passes.push_back(ld);
    }
    if (passes.size() < 2) continue;
    std::string param = key.substr(0, key.find('|'));
    if (reported_params.count(param)) continue;
    reported_params.insert(param);
    std::string kind = "reread";
    for (size_t i = 0; i < passes.size(); ++i) {
      for (size_t j = i + 1; j < passes.size(); ++j) {
        int a = passes[i].pass, b = passes[j].pass;
        if (feature(a, &LoopInfo::has_max) && !feature(a, &LoopInfo::has_exp) && feature(b, &LoopInfo::has_exp))
          kind = "softmax";
        else if (kind == "reread" && feature(a, &LoopInfo::has_accumulate) && !feature(a, &LoopInfo::has_square_diff) &&
                 !feature(a, &LoopInfo::has_max) && feature(b, &LoopInfo::has_square_diff))
          kind = "statistics";
      }
    }
    std::vector<NodeId> inputs;
    for (const auto& p : passes) inputs.push_back(p.node);
    const auto& second = fn_.nodes[passes[1].node];
    ir::Node n;
    n.op = "multi_pass";
    n.attrs = {{"param", param},
               {"kind", kind},
               {"passes", static_cast<int64_t>(passes.size())},
               {"index", std::get<std::string>(second.attrs.at("index"))}};
    n.inputs = inputs;
    n.range = second.range;
    n.region = second.region;
    fn_.nodes.push_back(std::move(n));
  }
}

void FunctionLowering::finish_host() {
  wrapper_ = find_wrapper();
  // What the loops around a sync or a launch do: launch work, record a timer (a
  // benchmark, which waits on purpose and times its launches), and, for the innermost
  // launching loop, break on a value copied back in it (a convergence check).
  for (auto& n : fn_.nodes) {
    if (n.op != "host_sync" && n.op != "launch") continue;
    bool launches = false, timing = false, decides_exit = false;
    for (uint32_t r = n.region; r != 0; r = fn_.regions[r].parent) {
      if (fn_.regions[r].kind != "loop") continue;
      auto flag = [&](const char* key) {
        auto it = fn_.regions[r].attrs.find(key);
        return it != fn_.regions[r].attrs.end() && std::get<bool>(it->second);
      };
      if (!launches && flag("launches")) decides_exit = flag("exit_on_copy");
      launches |= flag("launches");
      timing |= flag("timing");
    }
    n.attrs["timing_loop"] = timing;
    if (n.op != "host_sync") continue;
    n.attrs["loop_launches"] = launches;
    n.attrs["decides_exit"] = decides_exit;
  }
}

void propagate_shuffle(ir::Module& module_, const std::map<std::string, std::set<std::string>>& callees,
                       const std::map<std::string, size_t>& index) {
  auto uses = [&](const std::string& name) {
    auto it = index.find(name);
    if (it == index.end()) return false;
    const auto* a = module_.functions[it->second].attrs.count("uses_shuffle")
                        ? &module_.functions[it->second].attrs.at("uses_shuffle") : nullptr;
    return a && std::get<bool>(*a);
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [name, called] : callees) {
      if (uses(name)) continue;
      for (const auto& c : called)
        if (uses(c)) {
          module_.functions[index.at(name)].attrs["uses_shuffle"] = true;
          changed = true;
          break;
        }
    }
  }
  for (auto& f : module_.functions) {
    bool shuffle = f.attrs.count("uses_shuffle") && std::get<bool>(f.attrs["uses_shuffle"]);
    for (auto& n : f.nodes)
      if (n.op == "tree_reduction") n.attrs["kernel_uses_shuffle"] = shuffle;
  }
}

}  // namespace mlsem::cuda::detail
