"""ResNet and VGG building blocks: where conv -> activation is an epilogue and where it is not.

Models: a ResNet BasicBlock and Bottleneck (conv -> BatchNorm -> ReLU, residual add,
then ReLU), a VGG-style block without normalization written in forward, and a stem
in nn.Sequential (Conv -> ReLU inside a Sequential).

Expected findings:
- FUS002 (a hint, below the default threshold) on the first activation line of VGGBlock.forward (conv_a -> ReLU -> conv_b).
Not expected: FUS002 after BatchNorm (conv -> bn -> relu is a conv+bn folding
opportunity, not this rule) or after the residual add; on VGGBlock's second ReLU,
whose output goes to a pool, not to another GEMM; on the nn.Sequential stem
(Conv2d -> ReLU -> MaxPool), which runs once at the input.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)  # ok: FUS002
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)  # ok: FUS002
        return out


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = conv3x3(planes, planes, stride)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * self.expansion, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))  # ok: FUS002
        out = F.relu(self.bn2(self.conv2(out)))  # ok: FUS002
        out = self.bn3(self.conv3(out))
        return F.relu(out + x)  # ok: FUS002


class VGGBlock(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv_a = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1)
        self.conv_b = nn.Conv2d(out_channels, out_channels, kernel_size=3, padding=1)
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)

    def forward(self, x):
        x = self.conv_a(x)
        x = F.relu(x, inplace=True)  # hint: FUS002
        x = self.conv_b(x)
        x = F.relu(x, inplace=True)  # ok: FUS002
        return self.pool(x)


class ResNetStem(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
        )
        self.layer1 = nn.Sequential(BasicBlock(width, width), BasicBlock(width, width))

    def forward(self, x):
        return self.layer1(self.stem(x))  # ok: FUS002
