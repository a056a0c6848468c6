"""`reference`: forward outputs and gradients agree with a plain-PyTorch reference.

The Function and the reference (`reference: module:callable`) get the same positional
arguments and, through autograd, the same seeded grad_outputs. Every tensor output and the
gradient of every argument that requires grad is compared:

- float64 (or complex128) cases: element by element, |Function - reference| <= atol +
  rtol * |reference|, with the spec's `tolerance`.
- lower dtypes (float32, float16, bfloat16): the rule kernel authors use. The truth is the
  reference on float64 copies of the arguments; the Function and the reference both run in
  the declared dtype, and with error = max |value - truth| over the elements,

      error(Function) <= k * error(reference) + floor_ulps * eps(dtype) * max(1, max |truth|)

  (`low_precision: {k, floor_ulps}`). The Function is only ever called in the declared
  dtype, so a Function that runs only in half precision can be checked.

In a result, `analytical` is the Function's value at the worst element and `numerical` the
reference's: the reference itself in float64 cases, the float64 truth in lower dtypes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from gradverify.checks.base import CaseContext, UserCodeError, crash_result, user_code
from gradverify.checks.diagnosis import diagnose
from gradverify.checks.jacobian import differentiable_outputs, unravel
from gradverify.errors import TargetError
from gradverify.inputs import differentiable_indices, fresh_copies
from gradverify.results import Result, Status
from gradverify.target import Target, load_target

GRAD_OUTPUT_SALT = 5
_REAL_PART = {torch.complex32: torch.float16, torch.complex64: torch.float32}
_FIX_FORWARD_FIRST = "the forward already differs from the reference: fix that first"


@dataclass(frozen=True)
class Run:
    """One implementation on its own copies of the arguments."""

    arguments: tuple[Any, ...]
    outputs: tuple[Any, ...]
    gradients: dict[int, torch.Tensor]  # argument index -> gradient (zeros where None)
    unreached: frozenset[int] = frozenset()  # arguments autograd found no path to


@dataclass(frozen=True)
class Item:
    """One thing compared: an output, or the gradient of an argument."""

    label: str  # "output 0", "gradient of argument 1 (bias)"
    function: torch.Tensor
    reference: torch.Tensor  # the reference in the declared dtypes
    truth: torch.Tensor | None  # lower dtypes: the reference on float64 copies
    output_index: int | None = None
    input_index: int | None = None
    reference_unreached: bool = False  # autograd found no path through the reference


@dataclass(frozen=True)
class Finding:
    """How one item compares, and where it is worst."""

    ok: bool
    element: tuple[int, ...]
    analytical: float  # the Function's value at the worst element
    numerical: float  # the reference's there (float64 cases) or the truth's (lower dtypes)
    max_abs_error: float
    max_rel_error: float | None
    mismatched: int  # elements out of tolerance (or, in lower dtypes, above the allowance)
    total: int
    off: torch.Tensor  # their mask
    flat: int = 0  # the worst element's position in the flattened tensor
    budget: str = ""  # lower dtypes: both errors and the allowance, in words
    details: tuple[str, ...] = ()


class ReferenceCheck:
    """Outputs and gradients against a plain-PyTorch reference, in float64 or a lower dtype."""

    id: ClassVar[str] = "reference"
    description: ClassVar[str] = (
        "forward outputs and gradients match a plain-PyTorch reference (float64 tolerance, or "
        "k × the reference's own error in a lower dtype)"
    )

    def run(self, context: CaseContext) -> list[Result]:
        reference = _load_reference(context, self.id)
        if isinstance(reference, Result):
            return [reference]
        dtype = declared_dtype(context.arguments)
        try:
            function, theirs, truth = _runs(context, reference, low=dtype != torch.float64)
        except UserCodeError as error:
            return [self._crash(context, error)]
        except _Mismatch as mismatch:
            return [context.result(self.id, Status.FAIL, str(mismatch), **mismatch.fields)]
        return _judge(context, self.id, _items(context, function, theirs, truth), dtype)

    def _crash(self, context: CaseContext, error: UserCodeError) -> Result:
        if error.phase.startswith("the Function"):
            return crash_result(context, self.id, error)
        return context.result(
            self.id,
            Status.FAIL,
            str(error),
            details=error.frames if len(error.frames) > 1 else (),
            hint=f"the reference {context.spec.reference} crashed, not the Function: it must "
            "accept the same positional arguments as forward",
        )


class _Mismatch(Exception):
    """The Function and the reference return differently shaped results: nothing to compare."""

    def __init__(self, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.fields = fields


def _load_reference(context: CaseContext, check: str) -> Target | Result:
    name = context.spec.reference
    if name is None:
        return context.result(check, Status.SKIP, "no `reference:` in the spec", applies=False)
    try:
        return load_target(name)
    except TargetError as error:
        return context.result(
            check,
            Status.FAIL,
            f"cannot load the reference {name!r}: {error.message}",
            details=tuple(error.details.splitlines()),
            hint="`reference:` names a plain PyTorch callable as `package.module:function` or "
            "`path/to/file.py:function`",
        )


def declared_dtype(arguments: Sequence[Any]) -> torch.dtype:
    """The coarsest real dtype of the arguments that require grad (of every floating tensor
    argument when none does; complex counts as its real part); float64 when there is none."""
    tensors = [
        a
        for a in arguments
        if isinstance(a, torch.Tensor) and (a.is_floating_point() or a.is_complex())
    ]
    chosen = [a for a in tensors if a.requires_grad] or tensors
    dtypes = [torch.float64 if a.dtype == torch.complex128 else a.dtype for a in chosen]
    dtypes = [_REAL_PART.get(dtype, dtype) for dtype in dtypes]
    return max(dtypes, key=lambda dtype: torch.finfo(dtype).eps, default=torch.float64)


def _runs(context: CaseContext, reference: Target, low: bool) -> tuple[Run, Run, Run | None]:
    """The Function and the reference in the declared dtypes, and the float64 truth when low."""
    wrt = differentiable_indices(context.arguments)
    function = _forward(context, context.target.call, None, "the Function's forward")
    theirs = _forward(context, reference.call, None, "the reference")
    _same_structure(function.outputs, theirs.outputs, "the reference")
    seeds = _grad_outputs(function.outputs, theirs.outputs, context.generator(GRAD_OUTPUT_SALT))
    function = _with_gradients(function, wrt, seeds, "the Function's backward")
    theirs = _with_gradients(theirs, wrt, seeds, "the reference's backward")
    if not low:
        return function, theirs, None
    truth = _forward(context, reference.call, torch.float64, "the reference on float64 copies")
    _same_structure(function.outputs, truth.outputs, "the reference on float64 copies")
    truth = _with_gradients(truth, wrt, seeds, "the reference's backward on float64 copies")
    return function, theirs, truth


def _forward(
    context: CaseContext, call: Callable[..., Any], dtype: torch.dtype | None, phase: str
) -> Run:
    arguments = fresh_copies(context.arguments, dtype)
    # The same global seed before each run: implementations that draw random numbers the
    # same way (dropout) draw the same ones.
    torch.manual_seed(context.seed)
    with user_code(phase):
        outputs = call(*arguments)
    return Run(arguments, outputs if isinstance(outputs, tuple) else (outputs,), {})


def _same_structure(function: Sequence[Any], reference: Sequence[Any], who: str) -> None:
    """Raise _Mismatch unless both return as many outputs, tensors where tensors, same shapes."""
    if len(function) != len(reference):
        raise _Mismatch(
            f"the Function returns {len(function)} output(s), {who} {len(reference)}",
            hint="the reference must compute the same forward: the same outputs in the same order",
        )
    for index, (ours, theirs) in enumerate(zip(function, reference, strict=True)):
        if isinstance(ours, torch.Tensor) != isinstance(theirs, torch.Tensor):
            problem = f"is a {type(ours).__name__} from the Function but a {type(theirs).__name__}"
        elif not isinstance(ours, torch.Tensor):
            continue
        elif ours.shape != theirs.shape:
            problem = f"has shape {list(ours.shape)} from the Function but {list(theirs.shape)}"
        elif ours.is_complex() != theirs.is_complex():
            problem = f"is {_name(ours.dtype)} from the Function but {_name(theirs.dtype)}"
        else:
            continue
        raise _Mismatch(f"output {index} {problem} from {who}", output_index=index)


def _grad_outputs(
    function: Sequence[Any], reference: Sequence[Any], generator: torch.Generator
) -> dict[int, torch.Tensor]:
    """Seeded grad_outputs for the Function's differentiable outputs, in float64 but rounded
    through both implementations' output dtypes, so that every run gets the same values."""
    seeds = {}
    for index, output in differentiable_outputs(function):
        wide = torch.complex128 if output.is_complex() else torch.float64
        seed = torch.randn(output.shape, generator=generator, dtype=wide).to(output.dtype)
        theirs = reference[index]
        if theirs.is_floating_point() or theirs.is_complex():
            seed = seed.to(theirs.dtype)
        seeds[index] = seed.to(wide)
    return seeds


def _with_gradients(
    run: Run, wrt: Sequence[int], seeds: dict[int, torch.Tensor], phase: str
) -> Run:
    """The run with the gradient of each argument in `wrt` for the seeded grad_outputs."""
    pairs = [
        (run.outputs[index], seed.to(run.outputs[index].device, run.outputs[index].dtype))
        for index, seed in seeds.items()
        if run.outputs[index].requires_grad
    ]
    grads: Sequence[torch.Tensor | None] = [None] * len(wrt)
    if pairs and wrt:
        with user_code(phase):
            grads = torch.autograd.grad(
                [output for output, _ in pairs],
                [run.arguments[index] for index in wrt],
                [seed for _, seed in pairs],
                allow_unused=True,
            )
    gradients = {
        index: (grad if grad is not None else torch.zeros_like(run.arguments[index])).detach()
        for index, grad in zip(wrt, grads, strict=True)
    }
    unreached = frozenset(index for index, grad in zip(wrt, grads, strict=True) if grad is None)
    return dataclasses.replace(run, gradients=gradients, unreached=unreached)


def _items(context: CaseContext, function: Run, reference: Run, truth: Run | None) -> list[Item]:
    items = [
        Item(
            f"output {index}",
            output.detach(),
            reference.outputs[index].detach(),
            truth.outputs[index].detach() if truth is not None else None,
            output_index=index,
        )
        for index, output in enumerate(function.outputs)
        if isinstance(output, torch.Tensor)
    ]
    return items + [
        Item(
            f"gradient of {context.describe_argument(index)}",
            gradient,
            reference.gradients[index],
            truth.gradients[index] if truth is not None else None,
            input_index=index,
            reference_unreached=index in reference.unreached,
        )
        for index, gradient in function.gradients.items()
    ]


def tolerance_finding(
    function: torch.Tensor, reference: torch.Tensor, atol: float, rtol: float
) -> Finding:
    """Element-wise |Function - reference| <= atol + rtol * |reference|."""
    ours, theirs = _widen(function, reference)
    error = _abs_error(ours, theirs)
    # Where the reference is infinite or NaN only the identical value (error 0) passes.
    scale = torch.nan_to_num(theirs.abs(), nan=0.0, posinf=0.0)
    off = ~(error <= atol + rtol * scale)
    return _finding(ours, theirs, error, off, judged=torch.ones_like(off))


def budget_finding(item: Item, dtype: torch.dtype, k: float, floor_ulps: float) -> Finding:
    """max |Function - truth| <= k * max |reference - truth| + floor_ulps * eps * max(1, |truth|)."""
    assert item.truth is not None
    ours, truth = _widen(item.function, item.truth)
    theirs, _ = _widen(item.reference, item.truth)
    errors, reference_errors = _abs_error(ours, truth), _abs_error(theirs, truth)
    # Where the reference itself overflows in this dtype it is no yardstick: not judged there.
    judged = torch.isfinite(reference_errors)
    error, reference_error = _max(errors[judged]), _max(reference_errors[judged])
    scale = max(1.0, _max(truth.abs()[judged & truth.isfinite()]))
    floor = floor_ulps * torch.finfo(dtype).eps * scale
    allowed = k * reference_error + floor
    finding = _finding(ours, truth, errors, judged & ~(errors <= allowed), judged)
    flat = finding.flat
    at_worst = (
        f"at element {list(finding.element)}: Function {finding.analytical:.6g}, reference in "
        f"{_name(dtype)} {_scalar(theirs.reshape(-1)[flat]) if ours.numel() else 0.0:.6g}, "
        f"float64 truth {finding.numerical:.6g}"
    )
    budget = (
        f"Function's error {_sci(error)}, reference's own {_name(dtype)} error "
        f"{_sci(reference_error)}, allowed {_sci(allowed)} = {k:g} × {_sci(reference_error)} + "
        f"floor {_sci(floor)}"
    )
    if not judged.all():
        budget += f" ({int((~judged).sum())} element(s) not judged: the reference overflows there)"
    return dataclasses.replace(finding, budget=budget, details=(at_worst,))


def _widen(value: torch.Tensor, other: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Both in float64, or complex128 when either is complex."""
    wide = torch.complex128 if value.is_complex() or other.is_complex() else torch.float64
    return value.detach().to(wide), other.detach().to(wide)


def _abs_error(value: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
    """|value - exact|: 0 where both are the same non-finite value, inf for any other NaN."""
    error = (value - exact).abs()
    same = (value == exact) | (value.isnan() & exact.isnan())
    error = torch.where(same, torch.zeros_like(error), error)
    return torch.where(error.isnan(), torch.full_like(error, float("inf")), error)


def _finding(
    ours: torch.Tensor,
    theirs: torch.Tensor,
    error: torch.Tensor,
    off: torch.Tensor,
    judged: torch.Tensor,
) -> Finding:
    if error.numel() == 0:
        return Finding(True, (), 0.0, 0.0, 0.0, None, 0, 0, off)
    # The worst element among those off, or the worst judged one when none is.
    ranked = torch.where(off if off.any() else judged, error, torch.full_like(error, -1.0))
    flat = int(torch.argmax(ranked.reshape(-1)).item())
    relevant = off & (theirs.abs() > 0)
    return Finding(
        ok=not bool(off.any()),
        element=unravel(flat, ours.shape),
        analytical=_scalar(ours.reshape(-1)[flat]),
        numerical=_scalar(theirs.reshape(-1)[flat]),
        max_abs_error=_max(error[judged]),
        max_rel_error=_max(error[relevant] / theirs.abs()[relevant]) if relevant.any() else None,
        mismatched=int(off.sum().item()),
        total=error.numel(),
        off=off,
        flat=flat,
    )


def _judge(
    context: CaseContext, check: str, items: Sequence[Item], dtype: torch.dtype
) -> list[Result]:
    """One failure per disagreeing item, or one pass."""
    low = dtype != torch.float64
    pairs = [(item, _compare(context, item, dtype)) for item in items]
    truth_note = (_truth_note(dtype),) if low else ()
    forward_differs = any(not f.ok for i, f in pairs if i.output_index is not None)
    failures = [
        _failure(context, check, item, finding, dtype, forward_differs, truth_note)
        for item, finding in pairs
        if not finding.ok
    ]
    if failures:
        return failures
    tol, rule = context.tolerance, context.spec.low_precision
    outputs = sum(1 for item in items if item.output_index is not None)
    within = (
        f"in {_name(dtype)}, within {rule.k:g} × the reference's own {_name(dtype)} error + "
        f"{rule.floor_ulps:g} ulps"
        if low
        else f"within atol {tol.atol:g} + rtol {tol.rtol:g} × |reference|"
    )
    return [
        context.result(
            check,
            Status.PASS,
            f"forward and gradients match the reference {within}: {outputs} output(s), "
            f"{len(items) - outputs} gradient(s)",
            max_abs_error=max((f.max_abs_error for _, f in pairs), default=0.0),
            total=sum(f.total for _, f in pairs),
            notes=(*(f"{i.label}: {f.budget}" for i, f in pairs if low), *truth_note),
        )
    ]


def _compare(context: CaseContext, item: Item, dtype: torch.dtype) -> Finding:
    if dtype == torch.float64:
        tol = context.tolerance
        return tolerance_finding(item.function, item.reference, tol.atol, tol.rtol)
    rule = context.spec.low_precision
    return budget_finding(item, dtype, rule.k, rule.floor_ulps)


def _failure(
    context: CaseContext,
    check: str,
    item: Item,
    finding: Finding,
    dtype: torch.dtype,
    forward_differs: bool,
    notes: tuple[str, ...],
) -> Result:
    where = f"element {list(finding.element)}"
    if dtype != torch.float64:
        message = (
            f"{item.label} is less accurate in {_name(dtype)} than the reference allows, "
            f"worst at {where}: {finding.budget}"
        )
    else:
        message = (
            f"{item.label} differs from the reference at {where}: Function "
            f"{finding.analytical:.6g}, reference {finding.numerical:.6g} "
            f"({finding.mismatched} of {finding.total} elements off)"
        )
    return context.result(
        check,
        Status.FAIL,
        message,
        output_index=item.output_index,
        input_index=item.input_index,
        element=finding.element,
        analytical=finding.analytical,
        numerical=finding.numerical,
        max_abs_error=finding.max_abs_error,
        max_rel_error=finding.max_rel_error,
        mismatched=finding.mismatched,
        total=finding.total,
        hint=_hint(context, item, finding, dtype, forward_differs),
        notes=notes,
        details=finding.details,
    )


def _hint(
    context: CaseContext, item: Item, finding: Finding, dtype: torch.dtype, forward_differs: bool
) -> str:
    """The likely cause, in plain words; each says "likely"."""
    index, low = item.input_index, dtype != torch.float64
    in_code = "forward" if index is None else "backward"
    if index is not None and forward_differs:
        return _FIX_FORWARD_FIRST
    if index is not None and item.reference_unreached:
        return (
            f"the reference gives no gradient for {context.describe_argument(index)}: "
            "autograd finds no path to it through the reference (a .detach(), .item(), NumPy or "
            "torch.no_grad in it?); a reference must be differentiable by autograd"
        )
    if finding.max_abs_error == float("inf"):
        largest = f" (the largest {_name(dtype)} is {torch.finfo(dtype).max:g})" if low else ""
        return (
            "NaN or Inf where the reference is finite: likely an overflow or a division by zero "
            f"in {in_code}{largest}"
        )
    if low:
        return (
            f"more error than rounding in {_name(dtype)} explains: likely a wrong term or constant "
            f"in {in_code}, or an intermediate or an accumulation kept in {_name(dtype)} where "
            "float32 belongs"
        )
    if index is None:
        return (
            "the forward computes something other than the reference: likely a wrong formula or "
            "constant in forward (or a reference that is not the same function)"
        )
    argument = context.arguments[index]
    pattern = diagnose(
        item.function.reshape(1, -1),
        item.reference.reshape(1, -1),
        finding.off.reshape(1, -1),
        argument if isinstance(argument, torch.Tensor) else None,
        context.target.argument_name(index) or f"argument {index}",
        context.tolerance.atol,
        context.tolerance.rtol,
    )
    lead = "the forward agrees with the reference but this gradient does not"
    return f"{lead}; {pattern}" if pattern else f"{lead}: likely a wrong derivative in backward"


def _max(values: torch.Tensor) -> float:
    return float(values.max().item()) if values.numel() else 0.0


def _scalar(value: torch.Tensor) -> float:
    return float(value.real.item()) if value.is_complex() else float(value.item())


def _sci(value: float) -> str:
    """3.1e-3 rather than 0.0031 or 3.10e-03."""
    if value == 0 or value != value or abs(value) == float("inf"):
        return f"{value:g}"
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _truth_note(dtype: torch.dtype) -> str:
    return (
        f"the Function ran in {_name(dtype)} only; the truth is the reference on float64 copies "
        "of the same arguments"
    )


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")
