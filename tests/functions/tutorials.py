"""The custom Functions of the PyTorch tutorials and guides, written as they are published.

Unannotated on purpose: zero-config `check` and `init` must infer their inputs from the
signature and from what forward and backward do, as they would for a user who copied them.
"""

import torch
from torch.autograd import Function


class LegendrePolynomial3(Function):
    """ "PyTorch: Defining New autograd Functions": P3(x) = 1/2 (5x^3 - 3x)."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input**3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input**2 - 1)


class MyReLU(Function):
    """The same tutorial's earlier version: a ReLU whose backward masks a clone."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


class LinearFunction(Function):
    """ "Extending PyTorch": input [N, in], weight [out, in], bias [out] or None."""

    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


class LinearSetupContext(Function):
    """The guide's current form: forward without ctx, setup_context, bias without default."""

    @staticmethod
    def forward(input, weight, bias):
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def setup_context(ctx, inputs, output):
        input, weight, bias = inputs
        ctx.save_for_backward(input, weight, bias)

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


class MulConstant(Function):
    """ "Extending PyTorch": a tensor times a Python number, whose gradient is None."""

    @staticmethod
    def forward(tensor, constant):
        return tensor * constant

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, constant = inputs
        ctx.constant = constant

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.constant, None


class ClippedReLU(Function):
    """min(max(x, 0), clip_val), clip_val a Python number without default."""

    @staticmethod
    def forward(ctx, input, clip_val):
        ctx.save_for_backward(input)
        ctx.clip_val = clip_val
        return input.clamp(min=0, max=clip_val)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        grad_input[input > ctx.clip_val] = 0
        return grad_input, None


class SwishFunction(Function):
    """x * sigmoid(beta * x), beta a fixed Python number (its gradient None)."""

    @staticmethod
    def forward(ctx, x, beta):
        ctx.save_for_backward(x)
        ctx.beta = beta
        return x * torch.sigmoid(beta * x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        beta = ctx.beta
        sigmoid = torch.sigmoid(beta * x)
        return grad_output * (sigmoid + beta * x * sigmoid * (1 - sigmoid)), None


class LearnableSwish(Function):
    """Swish with a trainable scalar beta: backward returns beta's gradient as a 0-d tensor."""

    @staticmethod
    def forward(ctx, x, beta):
        ctx.save_for_backward(x, beta)
        return x * torch.sigmoid(beta * x)

    @staticmethod
    def backward(ctx, grad_output):
        x, beta = ctx.saved_tensors
        sigmoid = torch.sigmoid(beta * x)
        grad_x = grad_output * (sigmoid + beta * x * sigmoid * (1 - sigmoid))
        grad_beta = (grad_output * x * x * sigmoid * (1 - sigmoid)).sum()
        return grad_x, grad_beta


class LogSumExp(Function):
    """log(sum(exp(x), dim)), the max subtracted first; dim a Python int without default.

    backward uses the saved output, so that double backward differentiates through it.
    """

    @staticmethod
    def forward(ctx, input, dim):
        maximum = input.amax(dim, keepdim=True)
        output = ((input - maximum).exp().sum(dim, keepdim=True).log() + maximum).squeeze(dim)
        ctx.save_for_backward(input, output)
        ctx.dim = dim
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, output = ctx.saved_tensors
        softmax = (input - output.unsqueeze(ctx.dim)).exp()
        return grad_output.unsqueeze(ctx.dim) * softmax, None


class ReplaceGrad(Function):
    """VQGAN+CLIP: forward passes x_forward, backward sends the gradient to x_backward."""

    @staticmethod
    def forward(ctx, x_forward, x_backward):
        ctx.shape = x_backward.shape
        return x_forward

    @staticmethod
    def backward(ctx, grad_in):
        return None, grad_in.sum_to_size(ctx.shape)


class ClampWithGrad(Function):
    """VQGAN+CLIP: clamp whose gradient still pushes values outside back into [min, max]."""

    @staticmethod
    def forward(ctx, input, min, max):
        ctx.min = min
        ctx.max = max
        ctx.save_for_backward(input)
        return input.clamp(min, max)

    @staticmethod
    def backward(ctx, grad_in):
        (input,) = ctx.saved_tensors
        return grad_in * (grad_in * (input - input.clamp(ctx.min, ctx.max)) >= 0), None, None
