"""The catalogue's long texts, for `gradverify explain NAME`: per check, how it works and how
to fix what it commonly finds; TOPICS, what is not a check of its own (the gradient modes
and kinks); ALIASES, other names that find them. Torch-free, so explaining stays instant.
"""

from __future__ import annotations

EXPLANATIONS: dict[str, str] = {
    "lint": """\
Reads the Function's source (forward, setup_context, backward) and the graph node one call
of forward leaves behind, looking for pitfalls that work today and corrupt gradients later.
Each finding has a stable rule id, your file and line, and the remedy; run
`gradverify explain GV101` for one rule. Findings are `warn` unless the pitfall makes this
case crash or compute a wrong result.""",
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
no NaN/Inf, grad_output left unmodified, two runs giving the same gradients within
`tolerance.nondet_tol` or rounding (atomic adds sum in another order each run: the spread
is said, and the later checks allow it), and (exact mode) a third with grad_output times -2 giving -2
times them: a derivative is linear in grad_output.

Common failures and fixes:
  - too few or too many gradients: return exactly one value per forward argument, None
    for those without a gradient.
  - a wrong shape: a broadcast in forward must be undone in backward (sum over the
    broadcast dimensions, e.g. grad.sum(0) for a bias).
  - a wrong dtype: cast the gradient back to the argument's dtype (grad.to(x.dtype)).
  - grad_output modified: compute a new tensor instead of writing into grad_output.
  - nondeterministic: two runs differ by more than rounding: random numbers in backward,
    or a gradient assigned at repeated indices (grad[index] = g) where it must accumulate
    (index_add_, index_put_(accumulate=True)); if the spread is intended, set `nondet_tol`
    in the spec's `tolerance` to the value the report measured.
  - not linear in grad_output: backward squares grad_output, takes its abs or sign, or
    clips it, which gradcheck's one-hot grad_outputs of 1 never show; if the clip is on
    purpose (gradient clipping), declare `gradient: surrogate`.""",
    "layouts": """\
Runs each case again with one argument at a time in another layout, and compares the
outputs and the gradients still asked for with those of the declared layout. Each variant
can be turned off under `variants:` in the spec.

non-contiguous (`variants: {non_contiguous: false}` turns it off)
  Each tensor argument of rank >= 2 with the same values and other strides, as x.t() hands
  a Function.
  - a crash ("view size is not compatible…"): use .reshape() instead of .view(), or call
    .contiguous() first.
  - different values: code that reads memory as if it were contiguous (as_strided,
    .data_ptr(), a C++ or CUDA kernel): call .contiguous() on the inputs in forward.

requires_grad off (`variants: {requires_grad_off: false}` turns it off)
  Each argument that requires grad, in turn, with requires_grad off while the others keep
  it, as when a weight is frozen.
  - a crash: backward assumes every argument requires grad: a gradient left unassigned
    when ctx.needs_input_grad[i] is False, or a None used as a tensor.
  - different gradients for the other arguments: a branch on ctx.needs_input_grad (or
    requires_grad) that changes what is computed for them.

wasted work (`wasted_work: false` turns it off)
  In the requires_grad-off runs, backward still computes the gradient of an argument whose
  ctx.needs_input_grad entry is False. The result is right, only slower, so it is a `warn`:
  one per Function in a run, in its first case, naming every argument concerned (a note
  names the later cases that repeat it). Fix: compute gradient i only
  `if ctx.needs_input_grad[i]`, and return None for it otherwise. `wasted_work: false`
  silences it; the requires_grad-off variants still run.

When the outputs change with the seed (a Function that draws random numbers), the variants
are only checked for crashes.""",
    "finite_difference": """\
Computes the full Jacobian of forward by central differences,
(f(x + eps) - f(x - eps)) / (2 eps), on float64 copies of the inputs, and compares it with
the one backward gives, argument by argument. An element passes when
|analytical - numerical| <= atol + rtol * |numerical|. A failure names the argument, the
worst element, both values and how many entries are off, with the likely cause (opposite
sign, a constant factor, a transposed Jacobian, zeros, one region of the input). Complex
arguments and outputs are checked through their real and imaginary parts, as gradcheck
does (the conjugate Wirtinger derivative); a failure says which part is wrong.

Kernels in their own precision: a float32, float16 or bfloat16 case whose forward refuses
float64 (a Triton or CUDA launcher), or computes in float32 whatever it is given, is checked
in float32 instead: directional derivatives vᵀJu by central differences against backward's
projections, at the step whose error bound, measured by step halving and from float32
rounding of the values, is smallest. It fails only at 10× that bound, names the argument,
and the element and the pattern (sign, region, factor) where it can. gradcheck,
gradgradcheck, jvp, vmap and func need float64 and do not apply there. A forward that runs only in float16 or
bfloat16 is checked by `reference:` alone (the result says which lines to add).

Common failures and fixes:
  - a real bug: follow the likely cause; the element and values tell you where to look.
  - "errors of the size of float32 rounding" in a float64 case: forward or backward computes
    in float32. Declare the case in float32 (`dtype: float32`) to have it checked in float32,
    or give a `reference:`; loosening `tolerance` would hide real bugs with the noise.
  - a kink (ReLU at 0, a clamp at its bounds): reported as `warn` when the analytical value
    lies between the one-sided slopes; list known kinks under `kinks:` so generated inputs
    stay away from them.
  - a deliberately different backward (straight-through estimators): set
    `gradient: surrogate`; an approximate one: `gradient: approximate` with `max_error`.
  - noise in a correct float64 Function (cancellation, not float32): change `eps`, or
    loosen `tolerance` for that case only once the float32 verdict or a `reference:` rules
    out a bug.
  - complex z: backward returns grad * f'(z).conj() for a holomorphic f ("conjugate
    missing" when the conjugate is forgotten).""",
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
testing; when fast mode passes, group testing looks again, and torch's gradcheck runs on
the entries it localizes alone.""",
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
For a Function that defines `vmap` or sets `generate_vmap_rule = True`, or a custom op with
a rule registered by `register_vmap`: torch.vmap over a batch of 3 must give the outputs
(and gradients) of a Python loop over the same inputs. Without a rule, it is `skip`.

Common failures and fixes:
  - a wrong output shape: your vmap staticmethod must return the outputs and their batch
    dimensions (out_dims) matching where the batch dimension ends up.
  - with generate_vmap_rule, forward must be written with the new-style signature
    (forward without ctx, plus setup_context) and only torch operations.""",
    "func": """\
For a Function in the setup_context style (forward without ctx, plus a setup_context
staticmethod): torch.func.grad (of a seeded random weighting of the outputs, one argument
at a time), torch.func.vjp and torch.func.jacrev, and torch.func.jacfwd when the Function
defines jvp and a vmap rule, must agree with central finite differences (torch's
check_batched_grad idea). Literals are closed over; the arguments that require grad are
differentiated. For large inputs (randomized mode) grad and vjp are compared along a random
direction and jacrev/jacfwd are left out. A classic-style Function (forward(ctx, ...)) is a
`skip` saying how to make it transformable; so are plain functions and custom ops.

Where a transform disagrees with finite differences but gives backward's own values, the
error is backward's: it is reported once, pointing at finite_difference. Kinks and
rounding noise are judged as finite_difference judges them.

Common failures and fixes:
  - a transform raises: torch.func runs backward under torch.vmap (jacrev) and forward plus
    jvp under torch.vmap (jacfwd). Code that writes a batched grad_output into a tensor that
    is not batched in place (`grad_x = torch.zeros_like(x); grad_x[...] = grad_output`),
    reads values in Python (.item(), `if tensor:`), leaves torch (.numpy(), .data) or calls
    torch.autograd.grad inside backward fails there: compute out of place, with torch ops.
    Several transforms raising the same error are one finding, folded under `vmap` when
    torch.vmap fails at the same line.
  - torch.func.grad alone is wrong: it differentiates one argument at a time, so
    ctx.needs_input_grad is False for the others; likely backward reads the wrong entry.
  - jacfwd does not run: it needs a jvp staticmethod and a vmap rule
    (generate_vmap_rule = True or a vmap staticmethod).""",
    "opcheck": """\
For a torch.library custom op (a `torch.library.custom_op` object, `module:ns::name` or
`op:ns::name`): runs torch.library.opcheck's four tests on the case's inputs, which check
what a gradient check cannot see. Each failing test is a `fail` naming the test and
torch's reason; any other target is `skip`. Its first run in a process imports
AOTAutograd (about 3 s); later cases take about 0.1 s.

  test_schema                 the schema says what the op does to its arguments: it writes
                              only to arguments declared in `mutates_args`, and returns no
                              input or view of one.
  test_autograd_registration  the backward is registered where autograd finds it
                              (`register_autograd`, or a kernel at the Autograd key).
  test_faketensor             the fake implementation (`register_fake`) returns outputs of
                              the shapes, dtypes and devices the real op returns.
  test_aot_dispatch_dynamic   AOTAutograd, torch.compile's tracer, runs the op and its
                              backward with fake tensors of symbolic shapes, and their
                              results match eager (within `tolerance`).

Common failures and fixes:
  - register_fake returns the wrong shape (`register_fake returns shape [3, 4] where the op
    returns [3]`): compute the output's shape from the inputs' shapes, e.g.
    `x.new_empty(x.shape[:-1])` for a sum over the last dimension.
  - no fake implementation: add one with `@myop.register_fake`, returning empty tensors of
    the output's shape and dtype; torch.compile and torch.export trace the op with it.
  - test_aot_dispatch_dynamic fails after test_faketensor (it traces the op with the fake):
    one finding, said in a note of test_faketensor's; fix the fake first. Alone, it means
    the fake or the backward needs concrete values: no .item(), .tolist() or shapes that
    depend on values.
  - a wrong gradient is not opcheck's to find: finite_difference and gradcheck find it,
    at the element, pointing at the registered backward.""",
    "compile": """\
Runs the target (a Function, a plain function or a custom op) under
torch.compile(backend="aot_eager", fullgraph=True) on the case's inputs, and compares its
outputs and the gradients of every argument (seeded grad_outputs, as `backward` uses) with
eager, within `tolerance`. aot_eager traces forward and backward as torch.compile does
(dynamo, then AOTAutograd) without generating code, so it needs no C++ compiler.

  fail  a compiled output or gradient differs from eager: the argument (or output), the
        element, and both values (`compiled`, `eager`).
  warn  a graph break, or an error while tracing: dynamo's reason, at your file and line.
        The code still runs under torch.compile (in pieces, slower), but fullgraph=True and
        torch.export refuse it.

Opt-in: its first run in a process costs about 3 s (importing dynamo and its first
compile), later cases about 0.15 s; on every case it doubles the bundled suite's time.
Turn it on with `extra_checks: [compile]` in a spec, `extra_checks = ["compile"]` in
[tool.gradverify], `--extra-check compile`, or by listing it in `checks:`. Custom-op targets get it by default:
they exist for torch.compile. Each case compiles once, afresh: dynamo's caches are reset
before and after, so no case falls back to eager past dynamo's recompile limit.

Common failures and fixes:
  - `.item()`, `.tolist()` or a Python number read from a tensor in forward: a graph break.
    Keep the value a tensor (`x - x.mean()`, not `x - x.mean().item()`).
  - printing, Python-side counters or other state in forward or backward: dynamo cannot
    trace it; move it out of the Function.
  - compiled values differ: code that behaves differently when traced
    (`torch.compiler.is_compiling()` branches, values read once at trace time, globals
    changed between calls).""",
}

# Topics that are not checks: name -> (one-line summary, explanation).
TOPICS: dict[str, tuple[str, str]] = {
    "surrogate": (
        "`gradient: surrogate`: a backward that is on purpose not the derivative",
        """\
Some backward passes are deliberately not the derivative of forward: straight-through
estimators (sign or round in forward, the identity in backward), gradient reversal
(backward returns -grad_output), gradient clipping in backward, VQGAN's ClampWithGrad and
ReplaceGrad. Comparing them with finite differences would call correct code wrong.

With `gradient: surrogate` in the spec, the value comparisons (finite_difference,
gradcheck, gradgradcheck, jvp) are `skip` with that reason, and every structural check
still runs: lint, forward, backward (one well-formed gradient per argument), layouts,
reference, vmap.

To check the values too, name the gradient you meant:

  gradient: surrogate
  expected_gradient: mypkg.ops:ste_gradient   # expected(*inputs, *grad_outputs)

and the expected_gradient check compares backward with it (`gradverify explain
expected_gradient`); specs/surrogates.yaml has examples.

A surrogate checked in the default `exact` mode fails finite_difference, and where the
mismatch looks deliberate (a straight-through estimator) the hint names `gradient:
surrogate`. Declare it only when the difference is intended: a real bug also makes backward
differ from the derivative, and surrogate mode stops looking for it.""",
    ),
    "approximate": (
        "`gradient: approximate`: a backward close to the derivative, within `max_error`",
        """\
For a backward that approximates the derivative on purpose: a gradient from an external
library, a truncated series, an estimator. Exact checks would fail it on a difference that
is known and accepted.

With `gradient: approximate` (and `max_error`, default 1e-3) in the spec:
  - finite_difference reports the gradient's error relative to its largest value,
    max|analytical - numerical| / max|numerical|, as a figure, and fails only above
    max_error;
  - gradcheck and gradgradcheck are `skip` (their pass or fail has no room for a known
    error); jvp is judged by the same relative figure.

  gradient: approximate
  max_error: 1.0e-2

A stochastic estimator (a Monte-Carlo gradient) differs run to run: in this mode `backward`
reports how far two runs differ as a figure, not as nondeterminism, and `samples: N` makes
finite_difference compare the mean of N backward runs (its noise shrinks as 1/sqrt(N); a
biased estimator stays off however many runs are averaged):

  gradient: approximate
  max_error: 5.0e-2
  samples: 64

When one run of a varying backward is above max_error, the hint suggests a number of
samples from the spread it measured.

A forward that draws random numbers (a sampler) whose backward is an unbiased estimator
other than the sample's derivative (optimal transport, a control variate) is judged on
average over 256 forward seeds: in this mode it passes where the means agree for linear
and quadratic losses of the outputs alike; in exact mode it is a warning that points here.
Agreeing for linear losses only (unbiased for the mean only, as a forgotten dropout mask
is), or disagreeing for them, it fails in both, with a note that says which.""",
    ),
    "kinks": (
        "non-differentiable points (ReLU at 0, a clamp at its bounds) and how they are judged",
        """\
A kink is an input value where the Function is not differentiable: ReLU at 0, a clamp at
its bounds, abs at 0, max where two values tie. Any subgradient is a right answer there,
but a central difference across the kink averages the two slopes (0.5 against an
analytical 0 or 1), so plain gradcheck calls correct code wrong. gradverify does not:

  - At each mismatching entry it samples the output along that coordinate at x-eps,
    x-eps/2, x, x+eps/2 and x+eps. A smooth function fits a quadratic to rounding error; a
    kink leaves a residual in proportion to its change of slope. A jump between finite and
    non-finite values counts too.
  - A mismatch at a kink is a `warn` when the analytical value lies between the one-sided
    slopes, and still a `fail` outside them ("wrong only at non-differentiable points"). At
    a jump of the value the warning gives the jump: the central difference there is the
    jump over 2·eps and means nothing.
  - Rounding noise is not a kink: a forward computing in float32 inside a float64 case is
    rough everywhere at the size of float32 rounding. That is a `fail` ("errors of the size
    of float32 rounding ...: forward or backward computes in float32?"), never excused, and
    inputs are not drawn again for it.
  - gradcheck and gradgradcheck run again with those elements held fixed, so everything
    else they check still counts.
  - Randomly drawn inputs within eps of a kink are drawn again (at most 5 times; the
    report says so). Explicit `values` are never changed: a value on a kink on purpose
    passes with a warning.

List the kinks you know in the spec, and generated values keep at least 10·eps away:

  kinks: [0.0, 2.0]""",
    ),
}

# Other names users meet in reports and specs -> the check or topic that explains them.
ALIASES: dict[str, str] = {
    "non_contiguous": "layouts",
    "requires_grad_off": "layouts",
    "variants": "layouts",
    "wasted_work": "layouts",
    "needs_input_grad": "layouts",
    "kink": "kinks",
    "expected": "expected_gradient",
    "max_error": "approximate",
    "samples": "approximate",
}
