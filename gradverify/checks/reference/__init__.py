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

from gradverify.checks.reference.low_precision import (
    PrecisionLoss,
    budget_finding,
    dtype_name,
    tolerance_finding,
)
from gradverify.checks.reference.own_gradient import judged_by_finite_differences
from gradverify.checks.shared.backward_call import Run, autograd_gradients
from gradverify.checks.shared.case import CaseContext, crash_result
from gradverify.errors import TargetError
from gradverify.inputs import differentiable_indices, fresh_copies
from gradverify.numerics import seeded
from gradverify.numerics.compare import wide_dtype
from gradverify.numerics.diagnosis import diagnose
from gradverify.numerics.jacobian import differentiable_outputs, element_words
from gradverify.numerics.salts import Salt
from gradverify.results import Result, Status
from gradverify.target.loaded import Target
from gradverify.target.loading import load_target
from gradverify.usercode import UserCodeError, user_code

_REAL_PART = {torch.complex32: torch.float16, torch.complex64: torch.float32}
_FIX_FORWARD_FIRST = "the forward already differs from the reference: fix that first"


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


class ReferenceCheck:
    """Outputs and gradients against a plain-PyTorch reference, in float64 or a lower dtype."""

    id: ClassVar[str] = "reference"

    def run(self, context: CaseContext) -> list[Result]:
        reference = _load_reference(context, self.id)
        if isinstance(reference, Result):
            return [reference]
        dtype = declared_dtype(context.arguments)
        try:
            function, theirs, truth, seeds = _runs(context, reference, low=dtype != torch.float64)
        except UserCodeError as error:
            return [self._crash(context, error)]
        except _Mismatch as mismatch:
            return [context.result(self.id, Status.FAIL, str(mismatch), **mismatch.fields)]
        results = _judge(context, self.id, _items(context, function, theirs, truth), dtype)
        # Where backward passed finite_difference, a disagreeing reference is asked too.
        return judged_by_finite_differences(
            context, reference.call, theirs.arguments, seeds, results
        )

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


def _runs(
    context: CaseContext, reference: Target, low: bool
) -> tuple[Run, Run, Run | None, dict[int, torch.Tensor]]:
    """The Function and the reference in the declared dtypes, the float64 truth when low,
    and the seeded grad_outputs all three were differentiated with."""
    wrt = differentiable_indices(context.arguments)
    function = _forward(context, context.target.call, None, "the Function's forward")
    theirs = _forward(context, reference.call, None, "the reference")
    _same_structure(function.outputs, theirs.outputs, "the reference")
    seeds = _grad_outputs(
        function.outputs, theirs.outputs, context.generator(Salt.REFERENCE_GRAD_OUTPUTS)
    )
    function = _with_gradients(function, wrt, seeds, "the Function's backward")
    theirs = _with_gradients(theirs, wrt, seeds, "the reference's backward")
    if not low:
        return function, theirs, None, seeds
    truth = _forward(context, reference.call, torch.float64, "the reference on float64 copies")
    _same_structure(function.outputs, truth.outputs, "the reference on float64 copies")
    truth = _with_gradients(truth, wrt, seeds, "the reference's backward on float64 copies")
    return function, theirs, truth, seeds


def _forward(
    context: CaseContext, call: Callable[..., Any], dtype: torch.dtype | None, phase: str
) -> Run:
    arguments = fresh_copies(context.arguments, dtype)
    # The same global seed before each run: implementations that draw random numbers the
    # same way (dropout) draw the same ones.
    torch.manual_seed(context.seed)
    with user_code(phase):
        outputs = call(*arguments)
    return Run(arguments, outputs if isinstance(outputs, tuple) else (outputs,))


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
            problem = (
                f"is {dtype_name(ours.dtype)} from the Function but {dtype_name(theirs.dtype)}"
            )
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
        wide = wide_dtype(output)
        seed = seeded.normal(output.shape, generator, output.device, wide).to(output.dtype)
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
    gradients = autograd_gradients(pairs, run.arguments, wrt, phase)
    return dataclasses.replace(run, gradients=gradients)


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
            function.gradient(index),
            reference.gradient(index),
            truth.gradient(index) if truth is not None else None,
            input_index=index,
            reference_unreached=reference.gradients[index] is None,
        )
        for index in function.gradients
    ]


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
        f"in {dtype_name(dtype)}, within {rule.k:g} × the reference's own {dtype_name(dtype)} error + "
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


def _compare(context: CaseContext, item: Item, dtype: torch.dtype) -> PrecisionLoss:
    if dtype == torch.float64:
        tol = context.tolerance
        return tolerance_finding(item.function, item.reference, tol.atol, tol.rtol)
    rule = context.spec.low_precision
    assert item.truth is not None
    return budget_finding(item.function, item.reference, item.truth, dtype, rule.k, rule.floor_ulps)


def _failure(
    context: CaseContext,
    check: str,
    item: Item,
    finding: PrecisionLoss,
    dtype: torch.dtype,
    forward_differs: bool,
    notes: tuple[str, ...],
) -> Result:
    where = element_words(finding.element)
    if dtype != torch.float64:
        message = (
            f"{item.label} is less accurate in {dtype_name(dtype)} than the reference allows, "
            f"worst at {where}: {finding.budget}"
        )
    else:
        message = (
            f"{item.label} differs from the reference at {where}: Function "
            f"{finding.analytical_text}, reference {finding.numerical_text} "
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
    context: CaseContext,
    item: Item,
    finding: PrecisionLoss,
    dtype: torch.dtype,
    forward_differs: bool,
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
        largest = f" (the largest {dtype_name(dtype)} is {torch.finfo(dtype).max:g})" if low else ""
        return (
            "NaN or Inf where the reference is finite: likely an overflow or a division by zero "
            f"in {in_code}{largest}"
        )
    if low:
        lead = f"more error than rounding in {dtype_name(dtype)} explains"
        pattern = _pattern(context, item, finding, dtype) if index is not None else None
        if pattern:
            return f"{lead}; {pattern}"
        return (
            f"{lead}: likely a wrong term or constant in {in_code}, or an intermediate or an "
            f"accumulation kept in {dtype_name(dtype)} where float32 belongs"
        )
    if index is None:
        return (
            "the forward computes something other than the reference: likely a wrong formula or "
            "constant in forward (or a reference that is not the same function)"
        )
    pattern = _pattern(context, item, finding, dtype)
    lead = "the forward agrees with the reference but this gradient does not"
    return f"{lead}; {pattern}" if pattern else f"{lead}: likely a wrong derivative in backward"


def _pattern(
    context: CaseContext, item: Item, finding: PrecisionLoss, dtype: torch.dtype
) -> str | None:
    """The pattern of a gradient's errors, read as `finite_difference` reads a Jacobian's
    (sign, region, factor, transpose), from the gradient vᵀJ element by element."""
    index = item.input_index
    assert index is not None
    argument = context.arguments[index]
    if dtype == torch.float64:
        expected, atol, rtol = item.reference, context.tolerance.atol, context.tolerance.rtol
    else:
        # Against the float64 truth. An element within the allowance is right; the patterns
        # ask for clear margins (a region's right side within a tenth of the tolerance).
        assert item.truth is not None
        expected, atol, rtol = item.truth, 10 * finding.allowed, 0.0
    return diagnose(
        item.function.reshape(1, -1).to(torch.float64),
        expected.reshape(1, -1).to(torch.float64),
        finding.off.reshape(1, -1),
        argument if isinstance(argument, torch.Tensor) else None,
        context.target.argument_name(index) or f"argument {index}",
        atol,
        rtol,
        per_element=True,
    )


def _truth_note(dtype: torch.dtype) -> str:
    return (
        f"the Function ran in {dtype_name(dtype)} only; the truth is the reference on float64 copies "
        "of the same arguments"
    )
