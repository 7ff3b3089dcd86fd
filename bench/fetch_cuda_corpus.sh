#!/usr/bin/env bash
# Fetches the CUDA corpus: real CUDA sources from five public projects, at pinned
# commits, unpacked under $CUDA_CORPUS (default /work/cudacorpus), outside the repository
# (third-party source is never committed). Each project keeps its own directory layout
# so that its relative #includes resolve. Idempotent. Prints the corpus root.
#
# Source of each repository: a bare git clone (the session's `fetch` tool mirrors them
# under /work/.mirror/<owner>+<name>/repo; elsewhere `git clone --bare` them and set
# MIRROR to a directory laid out the same way).
set -euo pipefail
root="${CUDA_CORPUS:-/work/cudacorpus}"
mirror="${MIRROR:-/work/.mirror}"
mkdir -p "$root"

# repo commit paths...
extract() {
  local repo="$1" commit="$2"; shift 2
  local dir="$root/${repo//\//+}"
  local git_dir="$mirror/${repo//\//+}/repo"
  if [ ! -d "$git_dir" ]; then
    git clone -q --bare "https://github.com/$repo" "$git_dir"
  fi
  [ -e "$dir/.extracted-$commit" ] && return 0
  mkdir -p "$dir"
  # Sources and headers only (the mirrors may lack large binary blobs: images, docs).
  git --git-dir="$git_dir" ls-tree -r --name-only "$commit" -- "$@" |
    grep -E '\.(cu|cuh|h|hpp|cuh|inl|c|cpp)$' |
    xargs git --git-dir="$git_dir" archive "$commit" -- | tar -x -C "$dir"
  touch "$dir/.extracted-$commit"
}

# llm.c: GPT-2 training in CUDA; the dev/cuda kernel variants and the llmc/ headers.
extract karpathy/llm.c f1e2ace651495b74ae22d45d1723443fd00ecd3a \
  dev/cuda llmc train_gpt2.cu train_gpt2_fp32.cu test_gpt2.cu profile_gpt2.cu

# NVIDIA cuda-samples: the kernels of the introduction, techniques and performance samples,
# with the shared helper headers they include.
extract NVIDIA/cuda-samples c94ff366aed18c797b8a85dfaac7817b0228b420 \
  Common \
  Samples/0_Introduction/matrixMul Samples/0_Introduction/vectorAdd \
  Samples/0_Introduction/simpleCooperativeGroups Samples/0_Introduction/fp16ScalarProduct \
  Samples/0_Introduction/simpleTemplates Samples/0_Introduction/mergeSort \
  Samples/2_Concepts_and_Techniques/reduction Samples/2_Concepts_and_Techniques/scalarProd \
  Samples/2_Concepts_and_Techniques/scan Samples/2_Concepts_and_Techniques/shfl_scan \
  Samples/2_Concepts_and_Techniques/histogram Samples/2_Concepts_and_Techniques/convolutionSeparable \
  Samples/2_Concepts_and_Techniques/threadFenceReduction Samples/2_Concepts_and_Techniques/sortingNetworks \
  Samples/2_Concepts_and_Techniques/inlinePTX \
  Samples/3_CUDA_Features/globalToShmemAsyncCopy Samples/3_CUDA_Features/warpAggregatedAtomicsCG \
  Samples/3_CUDA_Features/binaryPartitionCG \
  Samples/5_Domain_Specific/BlackScholes Samples/5_Domain_Specific/fastWalshTransform \
  Samples/5_Domain_Specific/dwtHaar1D \
  Samples/6_Performance/transpose Samples/6_Performance/alignedTypes

# ggml's CUDA backend (the one llama.cpp uses): normalization, softmax, RoPE, pointwise
# and quantization kernels, with the ggml headers they include.
extract ggml-org/ggml d99724f2b141fed9e1a9f402213506c081433465 \
  include src/ggml-cuda src/ggml-common.h src/ggml-impl.h

# apex csrc: fused optimizers (multi_tensor_*), LayerNorm, sync-BN's Welford, MLP and
# Megatron's softmax and RoPE kernels. They include PyTorch's
# ATen headers, which are not installed here: nvcc does not compile them either, so they
# are analyzed only for the missing-header diagnostic (one per file).
extract NVIDIA/apex 6424da3b4faa6c8f062da4a48c424fff3f02d42d csrc

# DeepSpeed: its inference kernels (LayerNorm, RMSNorm, softmax, GELU, RoPE, dequantize,
# with vectorized load/store helpers), its training transformer kernels, quantization,
# random-LTD token gathers and fused optimizers; the training and optimizer kernels
# include PyTorch's ATen, so nvcc does not compile them here.
extract deepspeedai/DeepSpeed edaa7221267243c7be7fb49c5d5f5c4fb97b4641 \
  csrc/includes csrc/transformer/inference/includes csrc/transformer/inference/csrc \
  csrc/quantization csrc/random_ltd csrc/adam csrc/lamb csrc/lion \
  csrc/transformer/normalize_kernels.cu csrc/transformer/softmax_kernels.cu csrc/transformer/gelu_kernels.cu \
  csrc/transformer/dropout_kernels.cu csrc/transformer/general_kernels.cu csrc/transformer/transform_kernels.cu

# The analyzed files, and how their projects build them (nvcc command lines, as a
# compile_commands.json that `mlsem analyze -p` and bench/cuda_corpus.sh both read).
ggml_files="norm softmax rope unary binbcast getrows cpy argmax sumrows scale clamp concat mean
  cross-entropy-loss opt-step-adamw pad acc arange diagmask im2col count-equal out-prod ssm-conv wkv
  add-id argsort col2im-1d conv-transpose-1d conv2d-dw conv2d-transpose conv2d convert cumsum diag fill
  fwht gated_delta_net gla opt-step-sgd pad_reflect_1d pool2d quantize roll set-rows set snake softcap
  solve_tri ssm-scan sum top-k topk-moe tri tsembd upscale"
{
  for f in "$root"/karpathy+llm.c/dev/cuda/*.cu "$root"/karpathy+llm.c/*.cu; do
    echo "$f|$(dirname "$f")|"
  done
  for f in "$root"/NVIDIA+cuda-samples/Samples/*/*/*.cu; do
    echo "$f|$(dirname "$f")|-I$root/NVIDIA+cuda-samples/Common"
  done
  for n in $ggml_files; do
    g="$root/ggml-org+ggml"
    echo "$g/src/ggml-cuda/$n.cu|$g/src/ggml-cuda|-I$g/include -I$g/src -I$g/src/ggml-cuda -DGGML_CUDA_FA_ALL_QUANTS=0"
  done
  for f in "$root"/NVIDIA+apex/csrc/*.cu "$root"/NVIDIA+apex/csrc/megatron/*.cu; do
    echo "$f|$(dirname "$f")|-I$root/NVIDIA+apex/csrc"
  done
  d="$root/deepspeedai+DeepSpeed/csrc"
  for f in "$d"/transformer/inference/csrc/*.cu "$d"/transformer/*.cu "$d"/quantization/*.cu "$d"/random_ltd/*.cu \
           "$d"/adam/*.cu "$d"/lamb/*.cu "$d"/lion/*.cu; do
    echo "$f|$(dirname "$f")|-I$d/includes -I$d/transformer/inference/includes -DBF16_AVAILABLE"
  done
} | python3 -c '
import json, shlex, sys
out = []
for line in sys.stdin:
    path, directory, flags = line.rstrip("\n").split("|")
    cmd = ["/usr/local/cuda/bin/nvcc", "-std=c++17", "-arch=sm_90", *shlex.split(flags), "-c", path, "-o", "/dev/null"]
    out.append({"directory": directory, "file": path, "arguments": cmd})
json.dump(out, open(sys.argv[1], "w"), indent=1)
' "$root/compile_commands.json"
python3 -c 'import json,sys; print("\n".join(e["file"] for e in json.load(open(sys.argv[1]))))' \
  "$root/compile_commands.json" > "$root/files.txt"

echo "$root"
