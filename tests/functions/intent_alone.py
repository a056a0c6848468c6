"""Quantization with an STE backward: the module's one Function."""

import torch
from torch.autograd import Function


class Quantize(Function):
    @staticmethod
    def forward(ctx, x):
        return torch.tanh(x) * 0.5

    @staticmethod
    def backward(ctx, g):
        return g
