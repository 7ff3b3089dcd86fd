"""Layers whose bias a BatchNorm right after them cancels.

Expected findings:
- LAY001 on a Conv2d left at bias=True before BatchNorm2d (in forward and in a
  Sequential).
Not expected: LAY001 with bias=False, with bias written out (bias=True, bias=use_bias:
the author's choice), when the conv output is also used elsewhere (a residual before the norm), and
on a norm that is not a BatchNorm; on a Linear before BatchNorm1d only below the default
--min-confidence (the bias is added inside the matrix multiply: little to save).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvBlock(nn.Module):
    def __init__(self, cin, cout, use_bias):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.conv3 = nn.Conv2d(cout, cout, 1, bias=use_bias)
        self.bn3 = nn.BatchNorm2d(cout)
        self.conv4 = nn.Conv2d(cout, cout, 1)
        self.bn4 = nn.BatchNorm2d(cout)
        self.conv5 = nn.Conv2d(cout, cout, 1)
        self.conv6 = nn.Conv2d(cout, cout, 1, bias=True)
        self.bn6 = nn.BatchNorm2d(cout)
        self.gn = nn.GroupNorm(8, cout)
        self.stem = nn.Sequential(
            nn.Conv2d(cout, cout, 3, padding=1),  # expect: LAY001
            nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True),
        )
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.act(self.bn1(self.conv1(x)))  # expect: LAY001
        x = self.act(self.bn2(self.conv2(x)))  # ok: LAY001
        x = self.act(self.bn3(self.conv3(x)))  # ok: LAY001
        y = self.conv4(x)  # ok: LAY001
        x = self.bn4(y) + y
        x = self.gn(self.conv5(x))  # ok: LAY001
        x = self.bn6(self.conv6(x))  # ok: LAY001
        return self.stem(x)


class MoreBlocks(nn.Module):
    def __init__(self, c, conv_kw):
        super().__init__()
        self.lazy = nn.LazyLinear(c, False)
        self.bn_lazy = nn.BatchNorm1d(c)
        self.conv_kw = nn.Conv2d(c, c, 3, **conv_kw)
        self.bn_kw = nn.BatchNorm2d(c)
        self.weight = nn.Parameter(torch.randn(c, c, 1, 1))
        self.bias = nn.Parameter(torch.zeros(c))
        self.bn_f = nn.BatchNorm2d(c)
        self.shared = nn.Conv2d(c, c, 1)
        self.bn_shared = nn.BatchNorm2d(c)

    def forward(self, x, v):
        v = self.bn_lazy(self.lazy(v))  # ok: LAY001
        x = self.bn_kw(self.conv_kw(x))  # ok: LAY001
        x = self.bn_f(F.conv2d(x, self.weight, self.bias))  # ok: LAY001
        a = self.bn_shared(self.shared(x))  # ok: LAY001
        return a + self.shared(x), v


class Head(nn.Module):
    def __init__(self, dim, classes):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.bn = nn.BatchNorm1d(dim)
        self.out = nn.Linear(dim, classes, False)

    def forward(self, x):
        return self.out(self.bn(self.fc(x)).relu())  # ok: LAY001
