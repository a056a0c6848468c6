"""Functions whose backward branches on a number or on an input's values, where the spec's own
draw never takes the branch (tests/explore/test_unrun_branches.py): a bug only in that branch,
and a correct twin each."""

from __future__ import annotations

import torch


class ScaledClipWrongAboveTen(torch.autograd.Function):
    """y = scale * x, or 10 * x for scale above 10; backward's clipped branch forgets the 10."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x * min(scale, 10.0)

    @staticmethod
    def backward(ctx, grad):
        if ctx.scale > 10:
            return grad, None  # wrong: the factor is 10
        return grad * ctx.scale, None


class ScaledClip(torch.autograd.Function):
    """The correct twin of ScaledClipWrongAboveTen."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x * min(scale, 10.0)

    @staticmethod
    def backward(ctx, grad):
        if ctx.scale > 10:
            return grad * 10.0, None
        return grad * ctx.scale, None


class CubeWrongWhenAnyBelowMinusThree(torch.autograd.Function):
    """y = x ** 3; backward is wrong where some element of x is below -3."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if x.min() < -3:
            return grad * 3 * x.abs() * x  # wrong: |x| x is not x ** 2
        return grad * 3 * x**2


class CubeBranchingBelowMinusThree(torch.autograd.Function):
    """The correct twin of CubeWrongWhenAnyBelowMinusThree."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if x.min() < -3:
            return grad * 3 * x * x
        return grad * 3 * x**2
