"""A modular-named file with no generated file beside it: it is the code that runs.

No file beside this one names it as its source (there is no modeling_orphan.py, and
modeling_toy.py's header names modular_toy.py), so its findings are reported.

Expected findings:
- FUS002 (a hint, below the default threshold) on OrphanMLP's activation.
"""
import torch.nn as nn


class OrphanMLP(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.fc1 = nn.Linear(hidden_size, intermediate_size)
        self.fc2 = nn.Linear(intermediate_size, hidden_size)

    def forward(self, hidden_states):
        hidden_states = self.fc1(hidden_states)
        hidden_states = nn.functional.gelu(hidden_states)  # hint: FUS002
        return self.fc2(hidden_states)


class OrphanModel(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.mlp = OrphanMLP(hidden_size, 4 * hidden_size)

    def forward(self, hidden_states):
        return hidden_states + self.mlp(hidden_states)
