"""Layers whose bias a BatchNorm right after them cancels.

Expected findings:
- LAY001 on a Conv2d left at bias=True before BatchNorm2d (in forward and in a
  Sequential), and on a Linear before BatchNorm1d.
Not expected: LAY001 with bias=False, with bias written out (bias=True, bias=use_bias:
the author's choice), when the conv output is also used elsewhere (a residual before the norm), and
on a norm that is not a BatchNorm.
"""

import torch.nn as nn


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


class Head(nn.Module):
    def __init__(self, dim, classes):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.bn = nn.BatchNorm1d(dim)
        self.out = nn.Linear(dim, classes, False)

    def forward(self, x):
        return self.out(self.bn(self.fc(x)).relu())  # expect: LAY001
