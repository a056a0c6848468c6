"""Fully connected layers: the PyTorch docs' LinearFunction and a fused linear + ReLU."""

from __future__ import annotations

from typing import Any

import torch


class Linear(torch.autograd.Function):
    """y = input @ weight.T + bias, with input [N, in], weight [out, in], bias [out] or None."""

    @staticmethod
    def forward(
        ctx: Any,
        input: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor | None = None,
    ) -> torch.Tensor:
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def backward(
        ctx: Any, grad_output: torch.Tensor
    ) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        # Skipping unneeded gradients is an optimisation; returning them anyway is not an error.
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


class FusedLinearReLU(torch.autograd.Function):
    """y = relu(input @ weight.T + bias) in one Function, saving the output instead of the
    pre-activation."""

    @staticmethod
    def forward(
        ctx: Any, input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor
    ) -> torch.Tensor:
        output = torch.addmm(bias, input, weight.t()).clamp(min=0)
        ctx.save_for_backward(input, weight, output)
        return output

    @staticmethod
    def backward(
        ctx: Any, grad_output: torch.Tensor
    ) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
        input, weight, output = ctx.saved_tensors
        # relu(z) > 0 exactly where z > 0, so the output alone gives the mask.
        grad_pre = grad_output * (output > 0)
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_pre.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_pre.t().mm(input)
        if ctx.needs_input_grad[2]:
            grad_bias = grad_pre.sum(0)
        return grad_input, grad_weight, grad_bias
