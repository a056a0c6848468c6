"""What each check verifies, for `gradverify checks` and `gradverify explain CHECK`.

Kept apart from the check modules, which import torch: listing or explaining checks must
stay instant. The one-line summaries are the checks' own `description`s (a test keeps them
equal); the explanations say how the check works and how to fix what it commonly finds.
"""

from __future__ import annotations

SUMMARIES: dict[str, str] = {
    "lint": (
        "known pitfalls of hand-written Functions (GV101–GV105), from the source and the graph node"
    ),
    "forward": (
        "forward runs, returns floating outputs with no NaN/Inf, and does not modify its inputs in place"
    ),
    "backward": (
        "backward returns one well-formed, finite gradient per argument, deterministically, "
        "without modifying grad_output"
    ),
    "layouts": (
        "non-contiguous arguments and arguments with requires_grad off give the same outputs "
        "and gradients as the declared layout"
    ),
    "finite_difference": (
        "backward's Jacobian matches central finite differences, per argument, in float64"
    ),
    "gradcheck": "torch.autograd.gradcheck passes (float64, the spec's tolerances)",
    "gradgradcheck": (
        "torch.autograd.gradgradcheck passes: second derivatives (double backward) are right"
    ),
    "expected_gradient": (
        "a surrogate backward returns the gradient its `expected_gradient` function describes"
    ),
    "reference": (
        "forward outputs and gradients match a plain-PyTorch reference (float64 tolerance, or "
        "k × the reference's own error in a lower dtype)"
    ),
    "jvp": (
        "the Function's jvp (forward-mode AD) matches central differences along seeded random "
        "tangents, per argument, in float64"
    ),
    "vmap": (
        "torch.vmap over a batch of 3 gives the outputs and gradients of a loop over the same inputs"
    ),
}

EXPLANATIONS: dict[str, str] = {
    "lint": """\
Reads the Function's source (forward, setup_context, backward) and the graph node one call
of forward leaves behind, looking for pitfalls that work today and corrupt gradients later.
Each finding has a stable rule id, your file and line, and the remedy; run
`gradverify explain GV101` (… GV105) for one rule.

  GV101  a tensor stored as an attribute of ctx (ctx.x = x): save it with
         ctx.save_for_backward(x) and read ctx.saved_tensors; keep only non-tensors on ctx.
  GV102  `.data` in forward or backward: use .detach() or torch.no_grad() instead.
  GV103  an in-place operation on grad_output or a saved tensor in backward: compute a new
         tensor (grad_output * 2, not grad_output.mul_(2)).
  GV104  backward returns a different number of values than forward has arguments: return
         one gradient per argument, None for literals and integer tensors.
  GV105  save_for_backward given a non-tensor: store floats and shapes as ctx attributes.

Findings are `warn` unless the pitfall makes this case crash or compute a wrong result.""",
    "forward": """\
Calls forward (through .apply) on the case's inputs and verifies that it runs, that every
differentiable output is a floating or complex tensor, that no output holds NaN or Inf for
finite inputs, and that the caller's input tensors are unchanged (values and version
counters).

Common failures and fixes:
  - a crash: the report shows your traceback; often the case's shapes do not fit what
    forward expects: change `shape` in the spec, or the code.
  - NaN/Inf: an overflow or a division by zero; compute in a stable form (log-sum-exp with
    the maximum subtracted, clamp before log or division), or draw inputs from a safer
    range with `low`/`high`.
  - an input modified in place: work on a copy (x = x.clone()) or mark it with
    ctx.mark_dirty(x) and return it.""",
    "backward": """\
Calls your backward with seeded random grad_outputs and judges what it returned itself
(autograd would quietly cast or reshape some mistakes away): one gradient per forward
argument (extra trailing Nones are fine), each with its argument's shape, dtype and device,
no NaN/Inf, grad_output left unmodified, and two runs giving the same gradients within
`tolerance.nondet_tol`.

Common failures and fixes:
  - too few or too many gradients: return exactly one value per forward argument, None
    for those without a gradient.
  - a wrong shape: a broadcast in forward must be undone in backward (sum over the
    broadcast dimensions, e.g. grad.sum(0) for a bias).
  - a wrong dtype: cast the gradient back to the argument's dtype (grad.to(x.dtype)).
  - grad_output modified: compute a new tensor instead of writing into grad_output.
  - nondeterministic: random numbers or atomic adds in backward; if intended, raise
    `nondet_tol` in the spec's `tolerance`.""",
    "layouts": """\
Runs each case again with each tensor argument of rank >= 2 made non-contiguous (same
values, other strides), and with each argument in turn having requires_grad off; outputs
and gradients must match the declared layout. A gradient computed although
ctx.needs_input_grad says it is not needed is a `warn` (wasted work).

Common failures and fixes:
  - a crash for a non-contiguous argument ("view size is not compatible…"): use
    .reshape() instead of .view(), or call .contiguous() first.
  - different values for a non-contiguous argument: code that reads .data_ptr() or
    assumes strides (custom kernels): make the input contiguous before the kernel.
  - a crash with requires_grad off: backward must cope with None gradients not needed;
    check ctx.needs_input_grad[i] before computing gradient i.
Turn variants off with `variants: {non_contiguous: false}` or `{requires_grad_off: false}`.""",
    "finite_difference": """\
Computes the full Jacobian of forward by central differences,
(f(x + eps) - f(x - eps)) / (2 eps), on float64 copies of the inputs, and compares it with
the one backward gives, argument by argument. An element passes when
|analytical - numerical| <= atol + rtol * |numerical|. A failure names the argument, the
worst element, both values and how many entries are off, with the likely cause (opposite
sign, a constant factor, a transposed Jacobian, zeros, one region of the input).

Common failures and fixes:
  - a real bug: follow the likely cause; the element and values tell you where to look.
  - a kink (ReLU at 0, a clamp at its bounds): reported as `warn` when the analytical value
    lies between the one-sided slopes; list known kinks under `kinks:` so generated inputs
    stay away from them.
  - a deliberately different backward (straight-through estimators): set
    `gradient: surrogate`; an approximate one: `gradient: approximate` with `max_error`.
  - noise in a correct float64 Function: loosen `tolerance` (atol/rtol) or change `eps`.""",
    "gradcheck": """\
Runs torch.autograd.gradcheck on float64 copies of the inputs with the spec's tolerances,
and maps a failure back to forward's positional argument (torch counts only the inputs
that require grad) and to the worst element. It usually confirms `finite_difference`;
when only gradcheck fails, look at what it adds: backward must also cope with undefined
(None) grad_outputs, and two backward calls must agree (reentrancy, within
`tolerance.nondet_tol`).

Fixes: as for finite_difference; treat a None grad_output as zeros (or keep
ctx.set_materialize_grads(True)). At kinks it runs again with those elements held fixed.
In `mode: randomized` torch's fast mode is used and a failure is localized by group
testing.""",
    "gradgradcheck": """\
Runs torch.autograd.gradgradcheck with seeded grad_outputs: double backward (the gradient
of your backward) must match finite differences of backward. A failure names the gradient
and the variable of the wrong second derivative.

Common failures and fixes:
  - backward computed with non-differentiable operations (detached tensors, .data, numpy,
    in-place writes): the second derivative is silently wrong. Either write backward in
    differentiable torch operations, or decorate it with
    @torch.autograd.function.once_differentiable so double backward raises instead of
    lying; this check then reports `skip`.
  - a wrong first derivative: fix backward first (see finite_difference).""",
    "expected_gradient": """\
For `gradient: surrogate` with `expected_gradient: module:callable`: backward is compared
with the gradient its author intended, expected(*inputs, *grad_outputs), which returns one
gradient per forward argument. `analytical` is what backward returned, `numerical` what
expected_gradient gives.

Fixes: make the two agree; the callable must return a gradient (or None) for every
forward argument, in order, and accept the inputs followed by the grad_outputs.""",
    "reference": """\
With `reference: module:callable`, a plain PyTorch forward: outputs and the gradients of
every argument that requires grad are compared with the Function's, both through autograd
with the same seeded grad_outputs. In float64, element by element with `tolerance`; in
float32/float16/bfloat16 the Function may be at most `low_precision.k` times less accurate
than the reference run in the same dtype (both measured against the reference in
float64), plus `low_precision.floor_ulps` units in the last place.

Common failures and fixes:
  - the reference crashed or cannot be imported: it must accept the same positional
    arguments as forward and be importable as `package.module:function`.
  - a different number of outputs: the reference must return the same outputs in order.
  - too inaccurate in a low dtype: accumulate in float32 (sums, reductions), or raise `k`
    if the loss of accuracy is accepted.""",
    "jvp": """\
For a Function that defines `jvp`: forward-mode AD (torch.autograd.forward_ad) along seeded random
tangents is compared with central differences along the same tangents, argument by
argument, in float64. Without `jvp` it is `skip`.

Common failures and fixes:
  - jvp must return one tangent per forward output, computed from ctx's saved values and
    the input tangents (None for inputs without a tangent); a mismatch has the same likely
    causes as finite_difference (sign, factor, a term missing).
  - a tangent in the wrong dtype loses precision silently: compute in the output's dtype.""",
    "vmap": """\
For a Function that defines `vmap` or sets `generate_vmap_rule = True`: torch.vmap over a
batch of 3 must give the outputs (and gradients) of a Python loop over the same inputs.
Without either, it is `skip`.

Common failures and fixes:
  - a wrong output shape: your vmap staticmethod must return the outputs and their batch
    dimensions (out_dims) matching where the batch dimension ends up.
  - with generate_vmap_rule, forward must be written with the new-style signature
    (forward without ctx, plus setup_context) and only torch operations.""",
}


def summary(check_id: str) -> str:
    """The check's one-line description."""
    return SUMMARIES[check_id]


def explanation(check_id: str) -> str:
    """What the check verifies and how to fix its common failures."""
    return EXPLANATIONS[check_id]
