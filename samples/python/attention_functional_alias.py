"""Memory-augmented attention with unusual names and `import torch.nn.functional as Fn`.

Models: a retrieval layer that attends from the current chunk to a bank of cached
memories; nothing is called q, k or v (`queries`, `mem_keys`, `mem_vals`), the
scale is `self.temperature` used as a divisor, the softmax comes from the `Fn`
alias, the dropout from `Fn.dropout`, and the product with the values is the
method form `.matmul`.

Expected findings:
- ATT001 at `retrieved = weights.matmul(mem_vals)`.
Not expected: ATT001 in `nearest_memories`, which takes a softmax over similarities
only to pick the top-k entries (no product with values).
"""

import torch
import torch.nn.functional as Fn
from torch import nn


class MemoryRetrieval(nn.Module):
    def __init__(self, dim, mem_dim, temperature=None, dropout=0.1, topk=32):
        super().__init__()
        self.to_queries = nn.Linear(dim, mem_dim, bias=False)
        self.to_out = nn.Linear(mem_dim, dim)
        self.temperature = temperature if temperature is not None else mem_dim**0.5
        self.dropout = dropout
        self.topk = topk

    def forward(self, chunk, mem_keys, mem_vals):
        """chunk: (B, N, dim); mem_keys, mem_vals: (B, M, mem_dim)."""
        queries = self.to_queries(chunk)
        sim = torch.matmul(queries, mem_keys.mT)
        sim = sim / self.temperature
        weights = Fn.softmax(sim, dim=-1)
        weights = Fn.dropout(weights, p=self.dropout, training=self.training)
        retrieved = weights.matmul(mem_vals)  # expect: ATT001
        return chunk + self.to_out(retrieved)

    @torch.no_grad()
    def nearest_memories(self, chunk, mem_keys):
        """Indices of the top-k memories for each position, by softmax relevance."""
        queries = self.to_queries(chunk)
        relevance = Fn.softmax(queries @ mem_keys.transpose(-1, -2) / self.temperature, dim=-1)  # ok: ATT001
        return relevance.topk(self.topk, dim=-1).indices
