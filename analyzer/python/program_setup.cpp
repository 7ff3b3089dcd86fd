// The nodes of the training rules that judge how a script sets up its run, not a step
// (docs/IR.md, "Program facts"): single-process nn.DataParallel (`data_parallel`), a GPU
// training loop with no reduced precision anywhere in the file (`fp32_training`), a
// convolutional network trained on fixed-size images with cuDNN's autotuner off
// (`cudnn_autotune_off`), and the
// biased layers of files whose parameter names published checkpoints fix.
#include <cctype>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "python/names.h"
#include "python/program_util.h"

namespace mlsem::python::program {
namespace {

// Whether `n` sits in a block that also warns about it: a call to a warning or print
// (`logger.warning("DP not recommended, use torch.distributed.run for DDP")`,
// warnings.warn, print) whose arguments say DDP, DistributedDataParallel, torchrun or
// "not recommended". The code already says so.
bool warned_beside(const Syntax& S, const SourceFile& f, TSNode root, TSNode n) {
  TSNode block = parent_of(n);
  while (!ts_node_is_null(block) && ts_node_symbol(block) != S.block && ts_node_symbol(block) != S.module)
    block = parent_of(block);
  if (ts_node_is_null(block) || ts_node_symbol(block) == S.module) return false;
  bool warned = false;
  for (std::string_view name : {"warn", "warning", "print", "info"})
    each_call_to(S, f, root, name, [&](TSNode call, std::string_view) {
      std::string said = lower_ascii(text_of(field(call, S.f_arguments), f.text));
      for (std::string_view w : {"ddp", "distributeddataparallel", "torchrun", "distributed.run", "not recommended"})
        warned |= contains(said, w);
    }, block);
  return warned;
}

// Whether a device_ids argument names one GPU: a list or tuple of one element that is not
// a splat (`[0]`, `[0,]`, `(0,)`, `[args.gpu]`; not `[*devs]`, `[0] + devs` or a comprehension).
bool one_device(const Syntax& S, TSNode ids) {
  TSSymbol k = ts_node_symbol(ids);
  if (k != S.list && k != S.tuple) return false;
  std::vector<TSNode> items = named_children(ids, S.comment);
  return items.size() == 1 && ts_node_symbol(items[0]) != S.list_splat;
}

// Whether a value names one GPU: a string of digits (`"0"`) or an integer literal.
bool one_gpu_id(std::string_view v) {
  v = unquoted(v);
  if (v.empty()) return false;
  for (char ch : v)
    if (!std::isdigit(static_cast<unsigned char>(ch))) return false;
  return true;
}

// How the script makes one GPU visible by default, for the evidence: an assignment
// `os.environ["CUDA_VISIBLE_DEVICES"] = V` where V (through `str(...)`) is a literal id
// ("0") or an argparse option whose default is one (`opts.gpu_id`, `--gpu_id` default
// '0'). Empty when no such assignment exists; then as many GPUs as the machine has.
std::string one_gpu_visible(const Syntax& S, const SourceFile& f, TSNode root) {
  std::string_view t = f.text;
  for (size_t at = t.find("CUDA_VISIBLE_DEVICES"); at != std::string_view::npos;
       at = t.find("CUDA_VISIBLE_DEVICES", at + 1)) {
    TSNode n = ts_node_descendant_for_byte_range(root, static_cast<uint32_t>(at), static_cast<uint32_t>(at + 20));
    while (!ts_node_is_null(n) && ts_node_symbol(n) != S.assignment && ts_node_symbol(n) != S.block &&
           ts_node_symbol(n) != S.module)
      n = parent_of(n);
    if (ts_node_is_null(n) || ts_node_symbol(n) != S.assignment) continue;
    TSNode left = field(n, S.f_left), right = field(n, S.f_right);
    if (ts_node_is_null(right) || ts_node_symbol(left) != S.subscript || !contains(text_of(left, t), "environ")) continue;
    std::string_view v = text_of(right, t);
    if (v.starts_with("str(") && v.ends_with(")")) v = v.substr(4, v.size() - 5);
    if (one_gpu_id(v)) return "the script sets CUDA_VISIBLE_DEVICES to " + std::string(v);
    if (v.find('.') == std::string_view::npos) continue;
    std::string option;
    std::string dflt = option_default(S, f, root, last_part(v), &option);
    if (one_gpu_id(dflt)) return "CUDA_VISIBLE_DEVICES comes from " + option + ", whose default is " + dflt;
  }
  return {};
}

// `nn.DataParallel(model)` in a script (a `__main__` guard or argparse) that trains on a
// GPU: a `data_parallel` node each, not with device_ids of one GPU.
// DataParallel runs one Python thread per GPU in one process, scatters every batch and
// gathers every output through GPU 0, and copies the weights to every GPU on every
// forward; DistributedDataParallel (one process per GPU) does none of that.
void annotate_data_parallel(const Syntax& S, const SourceFile& file, TSNode root, ir::Module& out) {
  std::string_view t = file.text;
  if (!contains(t, "DataParallel(")) return;
  // A training script: a library's wrapper (a Trainer class) leaves the launch to its callers.
  if (!contains(t, "__main__") && !contains(t, "argparse")) return;
  bool ddp_too = !identifiers_named(root, t, "DistributedDataParallel", S.identifier).empty();
  std::string one_gpu = one_gpu_visible(S, file, root);
  each_call_to(S, file, root, "DataParallel", [&](TSNode n, std::string_view callee) {
    if (callee != "DataParallel" && !callee.ends_with("nn.DataParallel") && !callee.ends_with("parallel.DataParallel"))
      return;
    TSNode args = field(n, S.f_arguments);
    if (ts_node_is_null(args)) return;
    // The wrapped module (first positional, or module=) and device_ids (second, or device_ids=).
    std::vector<TSNode> a = named_children(args, S.comment);
    TSNode module{}, ids{};
    size_t positional = 0;
    for (TSNode x : a) {
      TSSymbol k = ts_node_symbol(x);
      if (k == S.list_splat || k == S.dictionary_splat) return;  // anything may be passed
      if (k == S.keyword_argument) {
        std::string_view name = text_of(field(x, S.f_name), t);
        if (name == "module") module = field(x, S.f_value);
        if (name == "device_ids") ids = field(x, S.f_value);
        continue;
      }
      if (positional == 0) module = x;
      if (positional == 1) ids = x;
      ++positional;
    }
    if (ts_node_is_null(module)) return;
    // One GPU: DataParallel then calls the module directly.
    if (!ts_node_is_null(ids) && one_device(S, ids)) return;
    ir::Node* node = add_node(out, range_of(n), "data_parallel");
    if (!node) return;
    node->attrs["model"] = std::string(text_of(module, t));
    if (ddp_too) node->attrs["ddp_beside"] = true;
    if (warned_beside(S, file, root, n)) node->attrs["warned"] = true;
    if (!one_gpu.empty()) node->attrs["one_gpu_by_default"] = one_gpu;
  });
}

// Whether `n` is prose: a comment, or inside a docstring (a string that is a statement
// of its own).
bool prose(const Syntax& S, TSNode n) {
  if (ts_node_symbol(n) == S.comment) return true;
  for (TSNode p = n; !ts_node_is_null(p); p = parent_of(p)) {
    if (ts_node_symbol(p) != S.string) continue;
    TSNode up = parent_of(p);
    return !ts_node_is_null(up) && ts_node_symbol(up) == S.expression_statement && ts_node_named_child_count(up) == 1;
  }
  return false;
}

// Whether bytes [b, e) of the file lie in code (or a string that is not a docstring), not
// in a comment or docstring.
bool code_at(const Syntax& S, TSNode root, size_t b, size_t e) {
  TSNode n = ts_node_descendant_for_byte_range(root, static_cast<uint32_t>(b), static_cast<uint32_t>(e));
  return !ts_node_is_null(n) && !prose(S, n);
}

// Whether `w` occurs in `text` (the file's text, or a same-length copy such as its
// lower-cased form) at a place in code.
bool written_in_code(const Syntax& S, TSNode root, std::string_view text, std::string_view w) {
  for (size_t at = text.find(w); at != std::string_view::npos; at = text.find(w, at + 1))
    if (code_at(S, root, at, at + w.size())) return true;
  return false;
}

// Whether the file chooses a number format anywhere, in code or strings (not comments or
// docstrings): autocast, GradScaler, `.half()`, bf16/fp16 flags (`--amp`, `use_fp16`), a
// mixed_precision= or precision= setting, a framework that sets it (Accelerate's
// Accelerator, DeepSpeed, Fabric), or float64 work (numerics that may need fp32
// throughout). Words are the lower-case runs of letters and digits (`use_amp` holds `amp`).
bool chooses_precision(const Syntax& S, const SourceFile& f, TSNode root) {
  static constexpr std::string_view kWords[] = {"autocast", "gradscaler", "float16", "bfloat16", "bf16", "fp16",
                                                "amp", "deepspeed", "fabric", "float64", "int8", "fp8", "quantize"};
  static constexpr std::string_view kPhrases[] = {".half(", ".double(", "mixed_precision", "precision=",
                                                  "Accelerator(", "import accelerate", "from accelerate"};
  std::string_view t = f.text;
  for (std::string_view p : kPhrases)
    if (written_in_code(S, root, t, p)) return true;
  for (size_t i = 0; i < t.size();) {
    if (!std::isalnum(static_cast<unsigned char>(t[i]))) {
      ++i;
      continue;
    }
    size_t b = i;
    while (i < t.size() && std::isalnum(static_cast<unsigned char>(t[i]))) ++i;
    if (i - b > 10 || i - b < 3) continue;
    std::string w = lower_ascii(t.substr(b, i - b));
    bool hit = false;
    for (std::string_view k : kWords) hit |= w == k;
    if (hit && code_at(S, root, b, i)) return true;
  }
  return false;
}

// The for/while statement a loop region spans.
TSNode loop_at(const Syntax& S, TSNode root, const Range& r) {
  TSNode n = ts_node_descendant_for_byte_range(root, r.begin_byte, r.end_byte);
  while (!ts_node_is_null(n) && ts_node_symbol(n) != S.for_statement && ts_node_symbol(n) != S.while_statement)
    n = parent_of(n);
  return n;
}

// Whether the script runs on the GPU only when asked: an argparse flag such as `--cuda`
// or `--accel` with action="store_true", or a device option whose default is "cpu".
bool gpu_opt_in(const Syntax& S, const SourceFile& f, TSNode root) {
  bool opt_in = false;
  each_call_to(S, f, root, "add_argument", [&](TSNode call, std::string_view) {
    TSNode args = field(call, S.f_arguments);
    std::vector<TSNode> a = named_children(args, S.comment);
    if (a.empty() || ts_node_symbol(a[0]) != S.string) return;
    std::string flag = lower_ascii(text_of(a[0], f.text));
    std::string dflt = lower_ascii(keyword(S, f, args, "default"));
    if (dflt == "\"cpu\"" || dflt == "'cpu'") opt_in = true;
    std::string action = keyword(S, f, args, "action");
    if (!contains(action, "store_true") || contains(flag, "no-") || contains(flag, "no_") || contains(flag, "disable"))
      return;
    for (std::string_view w : {"cuda", "accel", "gpu"})
      if (contains(flag, w)) opt_in = true;
  });
  return opt_in;
}

// Whether `n` runs under `with torch.no_grad():` (or inference_mode) inside `scope`. Not
// disables_grad (program_nodes.cpp), which also counts `set_grad_enabled(...)`: that wraps
// real training forwards (`set_grad_enabled(phase == 'train')`).
bool grad_off_within(const Syntax& S, const SourceFile& f, TSNode n, TSNode scope) {
  for (TSNode p = parent_of(n); !ts_node_is_null(p) && !ts_node_eq(p, scope); p = parent_of(p)) {
    if (ts_node_symbol(p) != S.with_statement) continue;
    std::string_view head = with_head(S, f, p);
    if (contains(head, "no_grad") || contains(head, "inference_mode")) return true;
  }
  return false;
}

// A GPU training file that never chooses a number format (chooses_precision): an
// `fp32_training` node at the first model call of its first training-step loop (the
// backward() call when no model call is found), once per file, with whether the file
// turns on TF32 for fp32 matmuls.
void annotate_fp32_training(const Syntax& S, const SourceFile& file, TSNode root, ir::Module& out) {
  std::string_view t = file.text;
  // FSDP and tensor parallelism set precision through their own policy (MixedPrecision,
  // MixedPrecisionPolicy), not autocast; an RPC trainer runs its model across processes.
  for (std::string_view w : {"fully_shard", "FullyShardedDataParallel", "parallelize_module", "distributed.rpc",
                             "distributed import rpc"})
    if (contains(t, w)) return;
  if (contains(lower_ascii(t), "fsdp")) return;
  if (chooses_precision(S, file, root)) return;
  // TF32 for matmuls: `torch.backends.cuda.matmul.allow_tf32 = True`, the float32 matmul
  // precision set to "high"/"medium", or `matmul.fp32_precision = "tf32"` (torch 2.9+).
  // `torch.backends.cudnn.allow_tf32` is about convolutions only, and on by default.
  bool tf32 = contains(t, "matmul.allow_tf32 = True") || contains(t, "matmul.allow_tf32=True") ||
              contains(t, "set_float32_matmul_precision(\"high") || contains(t, "set_float32_matmul_precision('high") ||
              contains(t, "set_float32_matmul_precision(\"medium") || contains(t, "set_float32_matmul_precision('medium") ||
              contains(t, "matmul.fp32_precision = \"tf32") || contains(t, "matmul.fp32_precision = 'tf32");
  bool opt_in = gpu_opt_in(S, file, root);
  // Datasets of 28x28 or 32x32 images: the models trained on them are small.
  std::string_view toy = small_image_dataset(t);
  for (ir::Function& fn : out.functions) {
    if (!fn.range.valid()) continue;
    std::vector<std::string> models;  // found when the function has a training loop
    for (const ir::Region& reg : fn.regions) {
      if (reg.kind != "loop" || !reg.range.valid() || !flag_of(reg, "innermost_training")) continue;
      if (models.empty()) models = model_names(file.slice(fn.range), ".train()");
      // A loop of an inlined callee is reported in that function.
      if (reg.range.begin_byte < fn.range.begin_byte || reg.range.end_byte > fn.range.end_byte) continue;
      TSNode loop = loop_at(S, root, reg.range);
      if (ts_node_is_null(loop)) continue;
      // The loop calls `loss.backward()` itself: a wrapper's `optimizer.backward(loss)`
      // (fairseq's FP16Optimizer, Accelerate, apex) manages the precision elsewhere.
      TSNode own_backward{};
      each_call_to(S, file, root, "backward", [&](TSNode call, std::string_view callee) {
        bool positional = false;
        for (TSNode a : named_children(field(call, S.f_arguments), S.comment))
          positional |= ts_node_symbol(a) != S.keyword_argument;
        if (ts_node_is_null(own_backward) && callee != "backward" && !positional) own_backward = call;
      }, loop);
      if (ts_node_is_null(own_backward)) continue;
      TSNode at = first_model_call(S, file, root, models, reg.range.begin_byte, reg.range.end_byte, false);
      if (ts_node_is_null(at)) at = own_backward;
      // The model called first runs without autograd (a frozen backbone): what trains is
      // another, perhaps small, module.
      if (grad_off_within(S, file, at, loop)) continue;
      ir::Node* node = add_node(out, range_of(at), "fp32_training");
      if (!node) continue;
      node->attrs["loop_line"] = static_cast<int64_t>(reg.range.begin.line);
      if (tf32) node->attrs["tf32"] = true;
      if (!toy.empty()) node->attrs["toy_data"] = std::string(toy);
      if (opt_in) node->attrs["gpu_opt_in"] = true;
      return;  // once per file: the number format is the script's choice
    }
  }
}

// A training script (`__main__` or argparse) that trains a convolutional network on
// images of one size and leaves cuDNN's autotuner off: a `cudnn_autotune_off` node at the
// first model call of its first training loop. A convolutional network: the file builds
// Conv2d/Conv3d layers or a torchvision or timm model. Images of one size: a fixed-size
// crop or resize, or a dataset of fixed-size images (ImageFolder with such a transform,
// CIFAR, MNIST). Not when the file sets cudnn.benchmark either way or asks for
// deterministic algorithms (a choice), nor with multi-scale training (shapes change), nor
// for a loop in a method (a library's Trainer class: the switch is its caller's).
void annotate_cudnn_autotune(const Syntax& S, const SourceFile& file, TSNode root, ir::Module& out) {
  std::string_view t = file.text;
  if (!contains(t, "__main__") && !contains(t, "argparse")) return;
  auto in_code = [&](std::string_view text, std::string_view w) { return written_in_code(S, root, text, w); };
  for (std::string_view w : {"cudnn.benchmark", "cudnn.deterministic", "use_deterministic_algorithms"})
    if (in_code(t, w)) return;
  std::string lower = lower_ascii(t);
  for (std::string_view w : {"multiscale", "multi_scale", "multi-scale", "random_size", "random_resize"})
    if (in_code(lower, w)) return;
  std::string_view conv;
  for (std::string_view w : {"Conv2d(", "Conv3d(", "torchvision.models", "import models", "timm.create_model",
                             "models.__dict__"})
    if (conv.empty() && in_code(t, w)) conv = w;
  if (conv.empty()) return;
  std::string_view fixed;
  for (std::string_view w : {"RandomResizedCrop(", "RandomCrop(", "CenterCrop(", "Resize(", "CIFAR10(", "CIFAR100(",
                             "MNIST(", "SVHN("})
    if (fixed.empty() && in_code(t, w)) fixed = w;
  if (fixed.empty()) return;
  for (ir::Function& fn : out.functions) {
    // A method's loop is a library's trainer (a Trainer class): a process-wide switch is
    // the calling script's to set.
    if (!fn.range.valid() || fn.name.find('.') != std::string::npos) continue;
    for (const ir::Region& reg : fn.regions) {
      if (reg.kind != "loop" || !reg.range.valid() || !flag_of(reg, "innermost_training")) continue;
      if (reg.range.begin_byte < fn.range.begin_byte || reg.range.end_byte > fn.range.end_byte) continue;
      std::vector<std::string> models = model_names(file.slice(fn.range), ".train()");
      TSNode at = first_model_call(S, file, root, models, reg.range.begin_byte, reg.range.end_byte, false);
      if (ts_node_is_null(at)) continue;
      ir::Node* node = add_node(out, range_of(at), "cudnn_autotune_off");
      if (!node) continue;
      node->attrs["conv"] = std::string(conv.substr(0, conv.find('(')));
      node->attrs["fixed_size"] = std::string(fixed.substr(0, fixed.find('(')));
      for (size_t i = 0; i < kDigitDatasets && !node->attrs.count("digits"); ++i)
        if (in_code(t, std::string(kSmallImageDatasets[i]) + "(")) node->attrs["digits"] = std::string(kSmallImageDatasets[i]);
      return;  // once per file: a setting of the whole run
    }
  }
}

}  // namespace

void annotate_setup(const SourceFile& file, TSNode root, ir::Module& out, bool gpu_file, bool trains) {
  const Syntax& S = Syntax::get();
  if (!gpu_file || !trains) return;  // the rules here are about scripts that train on a GPU
  annotate_data_parallel(S, file, root, out);
  annotate_fp32_training(S, file, root, out);
  annotate_cudnn_autotune(S, file, root, out);
}

}  // namespace mlsem::python::program
