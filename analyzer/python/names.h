// Name heuristics of the Python frontend: which names denote scalars, optimizers,
// module classes, dtypes; where a canonical callee lives. Pure functions on text.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace mlsem::python {

// Where a canonical dotted callee lives; `name` is its last component.
enum class Namespace { kTorch, kFunctional, kEinops, kMath, kOther };
struct CalleeName {
  Namespace ns = Namespace::kOther;
  std::string_view name;
};
CalleeName classify_callee(std::string_view canonical);

// Names that by convention hold a Python scalar: `scale`, `self.softmax_scale`,
// `head_dim`, `d_k`, `n_head`, `temperature`, `norm_factor`, ... (last component).
bool is_scalar_name(std::string_view dotted);
// Roots whose attributes are hyperparameters: `config.n_embd`, `args.lr`.
bool is_config_root(std::string_view name);
// `optimizer`, `opt`, `self.optim`, `g_opt`, ... (not `scheduler`).
bool is_optimizer_name(std::string_view dotted);
// A loss scaler's step, timm's NativeScaler as DeiT, MAE, ConvNeXt and Swin call it:
// `loss_scaler(loss, optimizer, ...)` runs backward() and optimizer.step() inside. The
// callee is named like a scaler (not an lr/warmup scheduler: `lr_scaler(optimizer, it)`),
// its first positional argument (the loss) is not an optimizer, and the optimizer is the
// second positional argument or `optimizer=`. The arguments as written; empty when absent.
bool is_scaler_step(std::string_view callee, std::string_view first, std::string_view second,
                    std::string_view optimizer_kw);
// Datasets of 28x28 or 32x32 images, whose models are small: the first three are the
// 28x28 digit sets. Longer names first, so that `FashionMNIST(` is not read as `MNIST(`.
inline constexpr std::string_view kSmallImageDatasets[] = {"FashionMNIST", "KMNIST",  "MNIST",
                                                           "CIFAR100",     "CIFAR10", "SVHN"};
inline constexpr size_t kDigitDatasets = 3;
// The first of kSmallImageDatasets the text constructs (`MNIST(`), or empty.
std::string_view small_image_dataset(std::string_view text);
// Names a mask is usually kept under: `mask`, `attn_mask`, `causal_bias`.
bool is_mask_name(std::string_view dotted);
bool contains_causal(std::string_view dotted);
// `torch.nn.Linear`, `GPT`, `optim.SGD`: the last component starts upper-case (a class).
bool is_class_name(std::string_view canonical);
// "torch.float16" / "torch.half" / "float16" -> "float16"; "" when not a dtype.
std::string dtype_name(std::string_view text);
// The IR op a torch.nn module class computes when called ("torch.nn.Linear" ->
// "linear"), "sequential"/"identity" for containers, "" when not modelled.
std::string_view module_op(std::string_view canonical_class);

// An einsum spec with two operands that contracts exactly one index: which operand
// needs a transpose to read it as a @ b. "bhid,bhjd->bhij" -> b transposed.
struct EinsumMatmul {
  bool transpose_a = false;
  bool transpose_b = false;
};
std::optional<EinsumMatmul> einsum_as_matmul(std::string_view spec);

}  // namespace mlsem::python
