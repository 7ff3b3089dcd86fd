// Python sources the cross-file tests build projects from.
#pragma once

namespace mlsem::test_support {

// A module holding a hand-written RMSNorm (an NRM002 finding in RMSNorm.forward).
inline constexpr const char* kRmsNormModule = R"(import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
)";

}  // namespace mlsem::test_support
