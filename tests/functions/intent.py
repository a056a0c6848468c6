"""The four shapes of surrogate met in real packages (issue 28), and the bugs that look like
them: a forgotten mask under clamp, a wrong gradient beside a surrogate one."""

import math

import torch
from torch.autograd import Function


class Spike(Function):
    @staticmethod
    def forward(ctx, v):
        ctx.save_for_backward(v)
        return (v > 0).to(v.dtype)

    @staticmethod
    def backward(ctx, g):
        (v,) = ctx.saved_tensors
        return g / (1 + (math.pi * v) ** 2)


class ScaleGrad(Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return 2 * g


class Route(Function):
    @staticmethod
    def forward(ctx, x, x_r):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g, g


class Fire(Function):
    @staticmethod
    def forward(ctx, p):
        ctx.save_for_backward(p)
        return torch.bernoulli(p)

    @staticmethod
    def backward(ctx, g):
        (p,) = ctx.saved_tensors
        return g * torch.ones_like(p)


class Clamp(Function):
    @staticmethod
    def forward(ctx, x):
        return x.clamp(-0.5, 0.5)

    @staticmethod
    def backward(ctx, g):
        return g.clone()


class RouteWrong(Function):
    """x's gradient is wrong: x_r's is a surrogate by construction, x's is not."""

    @staticmethod
    def forward(ctx, x, x_r):
        return 3 * x

    @staticmethod
    def backward(ctx, g):
        return g, g


class CommentedEstimator(Function):
    @staticmethod
    def forward(ctx, x):
        return 2 * torch.tanh(x)

    @staticmethod
    def backward(ctx, g):
        return g  # STE: the gradient of tanh is left out on purpose


class SpikeFloat32(Function):
    """A step whose output is float32 by design, with a surrogate backward."""

    @staticmethod
    def forward(ctx, v):
        ctx.save_for_backward(v)
        return (v > 0).float()

    @staticmethod
    def backward(ctx, g):
        (v,) = ctx.saved_tensors
        return g / (1 + (math.pi * v.float()) ** 2)


class Float32Roughly(Function):
    """Computes tanh in float32 and returns it: values rounded by the cast, a real loss."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.tanh(x.float())

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (1 - torch.tanh(x.float()) ** 2)


class SaturateForgotMask(Function):
    """A clamp between bounds that checks them first; backward forgot the mask."""

    @staticmethod
    def forward(ctx, x, lo: float, hi: float):
        if lo >= hi:
            raise ValueError("lo must be below hi")
        return torch.minimum(torch.maximum(x, x.new_tensor(lo)), x.new_tensor(hi))

    @staticmethod
    def backward(ctx, g):
        return g.clone(), None, None


class ClassmethodCube(Function):
    """x ** 3 written with classmethods (as entmax writes its Functions): forward's first
    parameter after cls is ctx, so argument 0 is x, which forward reads."""

    @classmethod
    def forward(cls, ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @classmethod
    def backward(cls, ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * g * x**2  # a seeded bug: 3 x^2
