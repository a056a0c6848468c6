# mypy: allow-untyped-defs
# A Triton kernel's parameters are typed by Triton at launch: an annotation other than
# tl.constexpr would change how Triton specializes the kernel, so they carry none.
"""SiLU's forward and backward as Triton kernels, correct and with a dropped term.

Imported by `gradverify.examples.triton_kernels` only when one of its Functions runs, so
that `import gradverify` never needs triton. Triton reads `TRITON_INTERPRET` when these
kernels are decorated (when this module is first imported): with `TRITON_INTERPRET=1` they
run on CPU tensors through Triton's interpreter, otherwise on CUDA tensors.

Each kernel loads its block, computes in float32 whatever the tensors' dtype (float16,
bfloat16 or float32), and rounds once when it stores, as kernel libraries do.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def silu_forward(x_pointer, y_pointer, count, BLOCK: tl.constexpr):
    """y = x * sigmoid(x)."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < count
    x = tl.load(x_pointer + offsets, mask=inside, other=0.0).to(tl.float32)
    y = x * tl.sigmoid(x)
    tl.store(y_pointer + offsets, y.to(y_pointer.dtype.element_ty), mask=inside)


@triton.jit
def silu_backward(x_pointer, grad_y_pointer, grad_x_pointer, count, BLOCK: tl.constexpr):
    """grad_x = grad_y * (s + x * s * (1 - s)), s = sigmoid(x)."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < count
    x = tl.load(x_pointer + offsets, mask=inside, other=0.0).to(tl.float32)
    grad_y = tl.load(grad_y_pointer + offsets, mask=inside, other=0.0).to(tl.float32)
    s = tl.sigmoid(x)
    grad_x = grad_y * (s + x * s * (1.0 - s))
    tl.store(grad_x_pointer + offsets, grad_x.to(grad_x_pointer.dtype.element_ty), mask=inside)


@triton.jit
def silu_backward_dropped_term(
    x_pointer, grad_y_pointer, grad_x_pointer, count, BLOCK: tl.constexpr
):
    """Bug: below x = -1 the x * s * (1 - s) term is dropped, as if SiLU were flat there.

    The gradient is s instead of s * (1 + x * (1 - s)) wherever x < -1: off by up to 0.22
    (near x = -1.28, SiLU's minimum), and of the wrong sign below it.
    """
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < count
    x = tl.load(x_pointer + offsets, mask=inside, other=0.0).to(tl.float32)
    grad_y = tl.load(grad_y_pointer + offsets, mask=inside, other=0.0).to(tl.float32)
    s = tl.sigmoid(x)
    slope = tl.where(x < -1.0, s, s + x * s * (1.0 - s))
    grad_x = grad_y * slope
    tl.store(grad_x_pointer + offsets, grad_x.to(grad_x_pointer.dtype.element_ty), mask=inside)
