"""Attention building blocks with memory-saving custom backward passes.

Shapes follow the [batch, heads, seq, head_dim] convention throughout.
"""

import math

import torch
from torch import nn


class SoftmaxMatmul(torch.autograd.Function):
    """``softmax(scores, -1) @ v`` without keeping the [T, S] probabilities alive.

    The probabilities are recomputed from the scores in backward.

    scores: [..., T, S]
    v:      [..., S, D]
    """

    @staticmethod
    def forward(ctx, scores, v):
        ctx.save_for_backward(scores, v)
        return torch.softmax(scores, -1) @ v

    @staticmethod
    def backward(ctx, grad_output):
        scores, v = ctx.saved_tensors
        p = torch.softmax(scores, -1)
        grad_v = p.transpose(-1, -2) @ grad_output
        dp = grad_output @ v.transpose(-1, -2)
        grad_scores = p * (dp - (dp * p).sum(-1, keepdim=True))
        return grad_scores, grad_v


class FusedSoftmaxMatmul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, scores, v):
        p = torch.softmax(scores, -1)
        ctx.save_for_backward(p, v)
        return p @ v

    @staticmethod
    def backward(ctx, grad_output):
        p, v = ctx.saved_tensors
        dp = torch.matmul(grad_output, v.mT)
        grad_scores = p * (dp - (dp * p).sum(-1, keepdim=True))
        return grad_scores, torch.matmul(p.mT, grad_output)


def _causal_mask(t, s, device):
    return torch.ones(t, s, dtype=torch.bool, device=device).triu(1)


class CausalSDPA(torch.autograd.Function):
    """Causal scaled dot-product attention, recomputing the probabilities in backward.

    Args:
        q: [B, H, T, D]
        k, v: [B, H, T, D] (self-attention: same length as q)
        scale: defaults to 1/sqrt(D)
    """

    @staticmethod
    def forward(ctx, q, k, v, scale=None):
        scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
        mask = _causal_mask(q.shape[-2], k.shape[-2], q.device)
        p = torch.softmax((q @ k.mT * scale).masked_fill(mask, float("-inf")), -1)
        ctx.save_for_backward(q, k, v)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, grad_output):
        q, k, v = ctx.saved_tensors
        mask = _causal_mask(q.shape[-2], k.shape[-2], q.device)
        p = torch.softmax((q @ k.mT * ctx.scale).masked_fill(mask, float("-inf")), -1)
        grad_v = p.mT @ grad_output
        dp = grad_output @ v.mT
        ds = p * (dp - (dp * p).sum(-1, keepdim=True)) * ctx.scale
        return ds @ k, ds.mT @ q, grad_v, None


class CausalAttentionFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, scale=None):
        if scale is None:
            scale = q.shape[-1] ** -0.5
        t = q.shape[-2]
        logits = torch.matmul(q, k.transpose(-2, -1)) * scale
        causal = torch.tril(torch.ones(t, t, dtype=torch.bool, device=q.device))
        logits = logits.masked_fill(~causal, float("-inf"))
        ctx.save_for_backward(q, k, v)
        ctx.scale = scale
        return torch.matmul(torch.softmax(logits, dim=-1), v)

    @staticmethod
    def backward(ctx, grad_output):
        q, k, v = ctx.saved_tensors
        # recompute the attention weights instead of storing them
        logits = torch.matmul(q, k.transpose(-2, -1)) * ctx.scale
        p = torch.softmax(logits, dim=-1)
        grad_v = torch.matmul(p.transpose(-2, -1), grad_output)
        dp = torch.matmul(grad_output, v.transpose(-2, -1))
        dlogits = p * (dp - (dp * p).sum(dim=-1, keepdim=True)) * ctx.scale
        grad_q = torch.matmul(dlogits, k)
        grad_k = torch.matmul(dlogits.transpose(-2, -1), q)
        return grad_q, grad_k, grad_v, None


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class RotaryEmbeddingFunction(torch.autograd.Function):
    """Apply rotary position embeddings (RoPE, half-split layout).

    x:        [B, H, T, D], D even
    cos, sin: [T, D] tables (no gradient)
    """

    @staticmethod
    def forward(ctx, x, cos, sin):
        ctx.save_for_backward(cos, sin)
        return x * cos + rotate_half(x) * sin

    @staticmethod
    def backward(ctx, grad_output):
        cos, sin = ctx.saved_tensors
        # rotate_half is a rotation by +90 degrees; its transpose is the rotation by -90
        return grad_output * cos - rotate_half(grad_output * sin), None, None


class ApplyRotaryEmb(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, cos, sin):
        assert x.shape[-1] % 2 == 0
        ctx.save_for_backward(cos, sin)
        return x * cos + rotate_half(x) * sin

    @staticmethod
    def backward(ctx, grad_output):
        cos, sin = ctx.saved_tensors
        return grad_output * cos + rotate_half(grad_output * sin), None, None


def rope_tables(seq_len: int, dim: int, base: float = 10000.0, dtype=torch.float32):
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float64), inv_freq)
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos().to(dtype), angles.sin().to(dtype)


class ALiBiBias(torch.autograd.Function):
    """Add ALiBi linear biases ``slope[h] * (j - i)`` to attention scores.

    scores: [B, H, T, S]
    slopes: [H] (learnable here; fixed geometric slopes in the original paper)
    """

    @staticmethod
    def forward(ctx, scores, slopes):
        t, s = scores.shape[-2:]
        rel = (
            torch.arange(s, device=scores.device) - torch.arange(t, device=scores.device)[:, None]
        ).to(scores.dtype)
        ctx.save_for_backward(rel)
        return scores + slopes[:, None, None] * rel

    @staticmethod
    def backward(ctx, grad_output):
        (rel,) = ctx.saved_tensors
        grad_slopes = None
        if ctx.needs_input_grad[1]:
            grad_slopes = (grad_output * rel).sum(dim=(0, 2, 3))
        return grad_output, grad_slopes


class KeyPaddingMaskedSoftmax(torch.autograd.Function):
    """Softmax over keys with padded keys removed.

    scores:           [B, H, T, S]
    key_padding_mask: [B, S] bool, True where the key is padding. Every sequence must have
                      at least one real key.
    """

    @staticmethod
    def forward(ctx, scores, key_padding_mask):
        mask = key_padding_mask[:, None, None, :]
        p = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad_output):
        (p,) = ctx.saved_tensors
        return p * (grad_output - (grad_output * p).sum(-1, keepdim=True)), None


class QuantizedSoftmax(torch.autograd.Function):
    """Softmax whose output is fake-quantised to ``bits`` unsigned levels (int8 attention)."""

    @staticmethod
    def forward(ctx, x, bits: int = 8):
        levels = 2**bits - 1
        p = torch.softmax(x, -1)
        ctx.save_for_backward(p)
        return torch.round(p * levels) / levels

    @staticmethod
    def backward(ctx, grad_output):
        (p,) = ctx.saved_tensors
        # STE: the rounding is treated as the identity
        return p * (grad_output - (grad_output * p).sum(-1, keepdim=True)), None


class SoftCappedSoftmax(torch.autograd.Function):
    """softmax(cap * tanh(x / cap)) over the last dim (logit soft-capping, Gemma 2)."""

    @staticmethod
    def forward(ctx, x, cap: float = 50.0):
        p = torch.softmax(cap * torch.tanh(x / cap), -1)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad_output):
        (p,) = ctx.saved_tensors
        return p * (grad_output - (grad_output * p).sum(-1, keepdim=True)), None


# ---------------------------------------------------------------------------------------


class SelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int, causal: bool = True, impl: str = "sdpa"):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.causal, self.impl = causal, impl

    def forward(self, x, rope=None):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if rope is not None:
            cos, sin = rope
            q = RotaryEmbeddingFunction.apply(q, cos, sin)
            k = RotaryEmbeddingFunction.apply(k, cos, sin)
        if self.impl == "sdpa":
            o = CausalSDPA.apply(q, k, v, None)
        else:
            o = CausalAttentionFn.apply(q, k, v, None)
        return self.out(o.transpose(1, 2).reshape(b, t, d))


def attend(q, k, v, bias_fn=None, key_padding_mask=None, fused=False):
    scores = q @ k.mT / math.sqrt(q.shape[-1])
    if bias_fn is not None:
        scores = bias_fn(scores)
    if key_padding_mask is not None:
        return KeyPaddingMaskedSoftmax.apply(scores, key_padding_mask) @ v
    return (FusedSoftmaxMatmul if fused else SoftmaxMatmul).apply(scores, v)


def alibi_slopes(heads: int):
    return torch.tensor([2 ** (-8.0 * (h + 1) / heads) for h in range(heads)])


# ---------------------------------------------------------------------------------------
# usage


def _qkv(b=2, h=2, t=5, d=4):
    return [torch.randn(b, h, t, d, requires_grad=True) for _ in range(3)]


def use_softmax_matmul():
    torch.manual_seed(0)
    q, k, v = _qkv()
    attend(q, k, v).pow(2).sum().backward()


def use_fused_softmax_matmul():
    torch.manual_seed(0)
    q, k, v = _qkv()
    attend(q, k, v, fused=True).pow(2).sum().backward()


def use_causal_sdpa():
    torch.manual_seed(0)
    attn = SelfAttention(8, 2)
    attn(torch.randn(2, 6, 8)).pow(2).mean().backward()


def use_causal_attention_fn():
    torch.manual_seed(0)
    attn = SelfAttention(8, 2, impl="eager")
    attn(torch.randn(2, 6, 8)).pow(2).mean().backward()


def use_rotary_embedding_function():
    torch.manual_seed(0)
    attn = SelfAttention(8, 2)
    attn(torch.randn(2, 6, 8), rope=rope_tables(6, 4)).pow(2).mean().backward()


def use_apply_rotary_emb():
    torch.manual_seed(0)
    q = torch.randn(2, 2, 6, 4, requires_grad=True)
    cos, sin = rope_tables(6, 4)
    ApplyRotaryEmb.apply(q, cos, sin).pow(2).sum().backward()


def use_alibi_bias():
    torch.manual_seed(0)
    slopes = nn.Parameter(alibi_slopes(2))
    q, k, v = _qkv()
    out = attend(q, k, v, bias_fn=lambda s: ALiBiBias.apply(s, slopes))
    out.pow(2).sum().backward()


def use_key_padding_masked_softmax():
    torch.manual_seed(0)
    q, k, v = _qkv()
    pad = torch.tensor([[False, False, False, True, True], [False] * 5])
    attend(q, k, v, key_padding_mask=pad).pow(2).sum().backward()


def use_quantized_softmax():
    torch.manual_seed(0)
    q, k, v = _qkv()
    p = QuantizedSoftmax.apply(q @ k.mT / 2.0, 8)
    (p @ v).pow(2).sum().backward()


def use_soft_capped_softmax():
    torch.manual_seed(0)
    head = nn.Linear(8, 16)
    p = SoftCappedSoftmax.apply(head(torch.randn(4, 8)) * 10.0, 30.0)
    torch.nn.functional.nll_loss(p.log(), torch.tensor([1, 2, 3, 4])).backward()
