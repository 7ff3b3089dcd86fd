"""Cross-entropy in Triton: loss = logsumexp(logits) - logits[target], the Triton rung for
cross_entropy. One program per row streams the vocabulary once with a per-lane online
(max, sum of exp); a second one-program kernel takes the mean over rows with a valid
target in a fixed order (deterministic)."""
import triton
import triton.language as tl


@triton.jit
def _ce_rows(logits_ptr, tgt_ptr, loss_ptr, vocab, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = logits_ptr + row * vocab
    c = tl.arange(0, BLOCK)
    m_i = tl.full([BLOCK], -float("inf"), tl.float32)
    s_i = tl.zeros([BLOCK], tl.float32)
    for start in range(0, vocab, BLOCK):
        msk = start + c < vocab
        x = tl.load(base + start + c, mask=msk, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m_i, x)
        alpha = tl.where(m_new == -float("inf"), 0.0, tl.exp(m_i - m_new))
        s_i = s_i * alpha + tl.where(m_new == -float("inf"), 0.0, tl.exp(x - m_new))
        m_i = m_new
    mx = tl.max(m_i, axis=0)
    lse = mx + tl.log(tl.sum(s_i * tl.exp(m_i - mx), axis=0))
    t = tl.load(tgt_ptr + row)
    valid = (t >= 0) & (t < vocab)
    picked = tl.load(base + tl.where(valid, t, 0)).to(tl.float32)
    tl.store(loss_ptr + row, tl.where(valid, lse - picked, 0.0))


@triton.jit
def _ce_mean(loss_ptr, tgt_ptr, mean_ptr, rows, vocab, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    cnt = tl.zeros([BLOCK], tl.float32)
    for start in range(0, rows, BLOCK):
        m = start + r < rows
        t = tl.load(tgt_ptr + start + r, mask=m, other=-1)
        v = m & (t >= 0) & (t < vocab)
        acc += tl.where(v, tl.load(loss_ptr + start + r, mask=m, other=0.0), 0.0)
        cnt += tl.where(v, 1.0, 0.0)
    total = tl.sum(cnt, axis=0)
    tl.store(mean_ptr, tl.where(total > 0, tl.sum(acc, axis=0) / total, float("nan")))


def cross_entropy(logits, targets, losses, mean):
    """Per-row losses (float32) and their mean over valid targets; writes both."""
    rows, vocab = logits.shape
    _ce_rows[(rows,)](logits, targets, losses, vocab, BLOCK=4096, num_warps=8)
    _ce_mean[(1,)](losses, targets, mean, rows, vocab, BLOCK=1024, num_warps=4)
    return losses
