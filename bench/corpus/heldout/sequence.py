"""Attention kernels and relative-position biases.

Shapes follow the ``[batch * heads, tokens, head_dim]`` layout the attention blocks use
after folding the heads into the batch.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def _scores(q, k, scale, causal):
    s = torch.matmul(q, k.transpose(-1, -2)) * scale
    if causal:
        tq, tk = s.shape[-2], s.shape[-1]
        mask = torch.ones(tq, tk, dtype=torch.bool, device=s.device).triu(1)
        s = s.masked_fill(mask, float("-inf"))
    return s


class AttentionFunction(torch.autograd.Function):
    """Softmax attention that stores no ``[T, T]`` tensor between forward and backward.

    Args:
        q: ``[B, Tq, D]``
        k: ``[B, Tk, D]``
        v: ``[B, Tk, Dv]``
        causal: mask keys after the query position; requires ``Tq == Tk``.
        scale: defaults to ``1 / sqrt(D)``.

    Returns ``[B, Tq, Dv]``. The probabilities are recomputed in backward.
    """

    @staticmethod
    def forward(ctx, q, k, v, causal: bool = False, scale: float | None = None):
        if causal:
            assert q.shape[-2] == k.shape[-2], "causal attention needs Tq == Tk"
        scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
        p = torch.softmax(_scores(q, k, scale, causal), dim=-1)
        ctx.save_for_backward(q, k, v)
        ctx.scale, ctx.causal = scale, causal
        return torch.matmul(p, v)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v = ctx.saved_tensors
        p = torch.softmax(_scores(q, k, ctx.scale, ctx.causal), dim=-1)
        grad_v = torch.matmul(p.transpose(-1, -2), grad_out)
        dp = torch.matmul(grad_out, v.transpose(-1, -2))
        ds = p * (dp - (dp * p).sum(dim=-1, keepdim=True))
        grad_q = torch.matmul(ds, k) * ctx.scale
        grad_k = torch.matmul(ds.transpose(-1, -2), q) * ctx.scale
        return grad_q, grad_k, grad_v, None, None


class FlashAttention(torch.autograd.Function):
    """Attention in the FlashAttention-2 style: forward keeps the row log-sum-exp,
    backward rebuilds ``P = exp(S - lse)`` and uses ``rowsum(dO * O)`` for the softmax
    Jacobian.

    q, k: ``[B, T, D]``; v: ``[B, T, Dv]``.
    """

    @staticmethod
    def forward(ctx, q, k, v, causal: bool = False, scale: float | None = None):
        scale = q.shape[-1] ** -0.5 if scale is None else scale
        s = _scores(q, k, scale, causal)
        lse = torch.logsumexp(s, dim=-1, keepdim=True)
        out = torch.matmul(torch.exp(s - lse), v)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.scale, ctx.causal = scale, causal
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out, lse = ctx.saved_tensors
        p = torch.exp(_scores(q, k, ctx.scale, ctx.causal) - lse)
        delta = (dout * out).sum(dim=-1, keepdim=True)
        dv = p.transpose(-1, -2) @ dout
        ds = p * (dout @ v.transpose(-1, -2) - delta)
        dq = ds @ k * ctx.scale
        dk = ds.transpose(-1, -2) @ q * ctx.scale
        return dq, dk, dv, None, None


def relative_position_index(n: int, device=None) -> torch.Tensor:
    """``index[i, j] = i - j + n - 1``, in ``[0, 2n - 2]``."""
    pos = torch.arange(n, device=device)
    return pos[:, None] - pos[None, :] + n - 1


class BiasTableGather(torch.autograd.Function):
    """Looks up a learned bias table: ``out[..., h] = table[index[...], h]``.

    table: ``[num_buckets, heads]``; index: int64, any shape, values in
    ``[0, num_buckets)``. Returns ``index.shape + (heads,)``. Many positions share a
    bucket, so backward accumulates.
    """

    @staticmethod
    def forward(ctx, table, index):
        ctx.save_for_backward(index)
        ctx.num_buckets = table.shape[0]
        return table[index]

    @staticmethod
    def backward(ctx, grad_output):
        (index,) = ctx.saved_tensors
        heads = grad_output.shape[-1]
        grad_table = grad_output.new_zeros(ctx.num_buckets, heads)
        grad_table.index_add_(0, index.reshape(-1), grad_output.reshape(-1, heads))
        return grad_table, None


class RelPosBiasLookup(torch.autograd.Function):
    @staticmethod
    def forward(ctx, table, index):
        ctx.save_for_backward(index)
        ctx.table_shape = table.shape
        return table[index]

    @staticmethod
    def backward(ctx, grad_output):
        (index,) = ctx.saved_tensors
        grad_table = grad_output.new_zeros(ctx.table_shape)
        grad_table[index.flatten()] = grad_output.flatten(0, -2)
        return grad_table, None


class RelativePositionBias(nn.Module):
    """T5/Swin-style learned bias added to the attention logits."""

    def __init__(self, max_len: int, heads: int, lookup=BiasTableGather):
        super().__init__()
        self.table = nn.Parameter(torch.zeros(2 * max_len - 1, heads))
        nn.init.trunc_normal_(self.table, std=0.02)
        self.register_buffer("index", relative_position_index(max_len), persistent=False)
        self.lookup = lookup

    def forward(self, n: int):
        idx = self.index[:n, :n] + (self.table.shape[0] // 2 - (n - 1))
        return self.lookup.apply(self.table, idx).permute(2, 0, 1)  # [heads, n, n]


class SelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int, causal: bool = False, kernel=AttentionFunction):
        super().__init__()
        self.heads, self.causal, self.kernel = heads, causal, kernel
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = (z.reshape(b * self.heads, t, -1) for z in (q, k, v))
        o = self.kernel.apply(q, k, v, self.causal)
        o = o.view(b, self.heads, t, -1).transpose(1, 2).reshape(b, t, d)
        return self.proj(o)


def use_attention_function():
    torch.manual_seed(0)
    attn = SelfAttention(16, heads=2, causal=True)
    x = torch.randn(2, 6, 16)
    loss = attn(x).pow(2).mean()
    loss.backward()
    return loss.item()


def use_flash_attention():
    torch.manual_seed(0)
    attn = SelfAttention(16, heads=2, causal=True, kernel=FlashAttention)
    x = torch.randn(2, 6, 16)
    loss = attn(x).pow(2).mean()
    loss.backward()
    return loss.item()


def _biased_attention_step(lookup):
    torch.manual_seed(0)
    bias = RelativePositionBias(max_len=8, heads=2, lookup=lookup)
    q, k, v = torch.randn(3, 2, 8, 4).unbind(0)
    logits = q @ k.transpose(-1, -2) / 2.0 + bias(8)
    loss = (torch.softmax(logits, -1) @ v).pow(2).sum()
    loss.backward()
    return bias.table.grad.norm().item()


def use_bias_table_gather():
    return _biased_attention_step(BiasTableGather)


def use_rel_pos_bias_lookup():
    return _biased_attention_step(RelPosBiasLookup)
