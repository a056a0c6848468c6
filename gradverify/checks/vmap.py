"""`vmap`: torch.vmap over a batch gives what a loop over the same inputs gives.

The batch holds the case's own arguments and two more seeded draws from the case's
distribution (explicit `values` repeat), stacked along a new dim 0; literals are not
batched. Outputs are compared entry by entry, then the gradients of a seeded random
weighting of the outputs, all in float64.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, ClassVar

import torch

from gradverify.checks.shared.case import CaseContext, crash_result, dtype_name, promotion_notes
from gradverify.checks.shared.overrides import defines_vmap
from gradverify.checks.shared.own_precision import needs_float64
from gradverify.inputs import build_inputs, differentiable_indices, fresh_copies
from gradverify.numerics import seeded
from gradverify.numerics.compare import Comparison, compare, wide_dtype
from gradverify.numerics.jacobian import differentiable_outputs, unravel
from gradverify.numerics.salts import Salt
from gradverify.results import Result, Status
from gradverify.usercode import UserCodeError, call_forward, user_code

BATCH = 3
NO_VMAP = "the Function defines no vmap rule (vmap or generate_vmap_rule)"
NOT_A_FUNCTION = "not a torch.autograd.Function: there is no vmap rule of its own to check"
NO_OP_VMAP = "the custom op registers no vmap rule (register_vmap)"
RANDOM = (
    "forward draws random numbers, which torch.vmap refuses by default: batched and looped "
    "results cannot be compared"
)
Arguments = tuple[Any, ...]
Outputs = tuple[Any, ...]


class VmapCheck:
    """torch.vmap against a Python loop: outputs, then gradients through the batched call."""

    id: ClassVar[str] = "vmap"

    def run(self, context: CaseContext) -> list[Result]:
        if not defines_vmap(context.target):
            reason = NO_VMAP if context.target.is_function else NOT_A_FUNCTION
            reason = NO_OP_VMAP if context.target.op_name is not None else reason
            return [context.result(self.id, Status.SKIP, reason, applies=False)]
        if not any(isinstance(a, torch.Tensor) for a in context.arguments):
            return [context.result(self.id, Status.SKIP, "no tensor argument to batch")]
        kernel = needs_float64(context, self.id)  # its draws are float64
        if kernel is not None:
            return [kernel]
        slices, notes = _draws(context)
        try:
            looped = [call_forward(context.target.call, arguments) for arguments in slices]
        except UserCodeError as error:
            return [crash_result(context, self.id, error)]
        batched = _stack(slices)
        try:
            outputs = _vmapped(context, batched, looped[0])
        except UserCodeError as error:
            return [_vmap_crash(context, error, notes)]
        problem = _compare_outputs(context, outputs, looped, notes)
        if problem is not None:
            return [problem]
        try:
            gradients = _compare_gradients(context, slices, looped, batched, outputs, notes)
        except UserCodeError as error:
            return [replace(crash_result(context, self.id, error), notes=notes)]
        if isinstance(gradients, Result):
            return [gradients]
        summary = f"torch.vmap over a batch of {BATCH} matches a loop over the same inputs"
        return [context.result(self.id, Status.PASS, f"{summary} ({gradients})", notes=notes)]


def _draws(context: CaseContext) -> tuple[list[Arguments], tuple[str, ...]]:
    """The batch's entries: the case's arguments, then new seeded draws of the same case."""
    first = fresh_copies(context.arguments, torch.float64)
    case = next((c for c in context.spec.cases if c.name == context.case), None)
    slices = [first]
    for draw in range(1, BATCH):
        other = build_inputs(case, context.seed + draw) if case is not None else first
        candidate = fresh_copies(other, torch.float64)
        slices.append(candidate if _same_layout(candidate, first) else fresh_copies(first))
    notes = promotion_notes(context, context.arguments)
    if all(_same_values(entry, first) for entry in slices[1:]):
        notes += (
            f"the case's tensors are all explicit values, so the {BATCH} batch entries are "
            "identical; random `shape` inputs would test the batching better",
        )
    return slices, notes


def _same_layout(one: Arguments, other: Arguments) -> bool:
    return len(one) == len(other) and all(
        not isinstance(a, torch.Tensor) or (isinstance(b, torch.Tensor) and a.shape == b.shape)
        for a, b in zip(one, other, strict=True)
    )


def _same_values(one: Arguments, other: Arguments) -> bool:
    return all(
        torch.equal(a, b)
        for a, b in zip(one, other, strict=True)
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
    )


def _stack(slices: Sequence[Arguments]) -> Arguments:
    """Tensors stacked along a new dim 0 as new leaves; literals as they are."""
    stacked = []
    for index, argument in enumerate(slices[0]):
        if isinstance(argument, torch.Tensor):
            batch = torch.stack([entry[index].detach() for entry in slices])
            stacked.append(batch.requires_grad_(argument.requires_grad))
        else:
            stacked.append(argument)
    return tuple(stacked)


def _vmapped(context: CaseContext, batched: Arguments, unbatched: Outputs) -> Outputs:
    in_dims = tuple(0 if isinstance(a, torch.Tensor) else None for a in batched)
    # A non-tensor output (a number beside the result) is not batched: torch.vmap refuses it
    # unless out_dims says None for it, as a user who vmaps such a Function writes.
    out_dims: Any = 0
    if not all(isinstance(o, torch.Tensor) for o in unbatched):
        out_dims = tuple(0 if isinstance(o, torch.Tensor) else None for o in unbatched)
    with user_code("vmap"):
        outputs = torch.vmap(context.target.call, in_dims=in_dims, out_dims=out_dims)(*batched)
    return outputs if isinstance(outputs, tuple) else (outputs,)


def _vmap_crash(context: CaseContext, error: UserCodeError, notes: tuple[str, ...]) -> Result:
    if "randomness" in str(error.error):  # torch refuses random ops under vmap by default
        return context.result(VmapCheck.id, Status.SKIP, RANDOM, notes=notes)
    result = replace(crash_result(context, VmapCheck.id, error), notes=notes)
    function = context.target.obj
    if result.failed and function.setup_context is torch.autograd.Function.setup_context:
        hint = (
            "torch.vmap needs the setup_context style: a forward without ctx, and a "
            "setup_context(ctx, inputs, output) staticmethod that saves what backward needs"
        )
        return replace(result, hint=hint)
    return result


def _compare_outputs(
    context: CaseContext, outputs: Outputs, looped: Sequence[Outputs], notes: tuple[str, ...]
) -> Result | None:
    """The first output where vmap and the loop disagree, or None."""
    if len(outputs) != len(looped[0]):
        return context.result(
            VmapCheck.id,
            Status.FAIL,
            f"torch.vmap returned {len(outputs)} output(s), the loop {len(looped[0])}",
            notes=notes,
        )
    for index, got in enumerate(outputs):
        if not isinstance(looped[0][index], torch.Tensor):
            continue
        expected = torch.stack([entry[index].detach() for entry in looped])
        problem = _compare_one(context, f"output {index}", got.detach(), expected, notes)
        if problem is not None:
            return replace(problem, output_index=index)
    return None


def _compare_one(
    context: CaseContext,
    what: str,
    got: torch.Tensor,
    expected: torch.Tensor,
    notes: tuple[str, ...],
) -> Result | None:
    """vmap's batched `got` against the loop's stacked `expected`; a failure, or None."""
    fail = dict(notes=notes)
    if got.shape != expected.shape:
        return context.result(
            VmapCheck.id,
            Status.FAIL,
            f"{what} under torch.vmap has shape {list(got.shape)}, the loop gives "
            f"{list(expected.shape)}",
            hint=_shape_hint(got, expected),
            **fail,
        )
    if got.dtype != expected.dtype:
        return context.result(
            VmapCheck.id,
            Status.FAIL,
            f"{what} under torch.vmap is {dtype_name(got.dtype)}, the loop gives {dtype_name(expected.dtype)}",
            **fail,
        )
    comparison = _comparison(got, expected, context.tolerance.atol, context.tolerance.rtol)
    if comparison.ok:
        return None
    element = unravel(comparison.row, expected.shape)
    return context.result(
        VmapCheck.id,
        Status.FAIL,
        f"{what} under torch.vmap differs from a loop at batch entry {element[0]}, element "
        f"{list(element[1:])}: vmap gives {comparison.analytical + 0.0:.6g}, the loop "
        f"{comparison.numerical + 0.0:.6g} ({comparison.mismatched} of {comparison.total} entries off)",
        element=element,
        analytical=comparison.analytical + 0.0,  # no -0 in reports
        numerical=comparison.numerical + 0.0,
        max_abs_error=comparison.max_abs_error,
        max_rel_error=comparison.max_rel_error,
        mismatched=comparison.mismatched,
        total=comparison.total,
        hint=_value_hint(context, got, expected),
        **fail,
    )


def _comparison(got: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float) -> Comparison:
    """Entry-wise comparison in which equal values, NaN and inf included, always agree."""
    wide = wide_dtype(got, expected)
    got, expected = got.to(wide), expected.to(wide)
    same = (got == expected) | (torch.isnan(got) & torch.isnan(expected))
    zero = torch.zeros_like(got)
    got, expected = torch.where(same, zero, got), torch.where(same, zero, expected)
    return compare(got.reshape(-1, 1), expected.reshape(-1, 1), atol, rtol)


def _compare_gradients(
    context: CaseContext,
    slices: Sequence[Arguments],
    looped: Sequence[Outputs],
    batched: Arguments,
    outputs: Outputs,
    notes: tuple[str, ...],
) -> Result | str:
    """Gradients of a seeded weighting of the outputs: a failure, or what was compared."""
    wrt = differentiable_indices(slices[0])
    selected = [index for index, _ in differentiable_outputs(looped[0])]
    if not wrt or not selected:
        return f"{len(outputs)} output(s); no gradient to compare"
    weights = _weights(context, looped[0], selected)
    try:
        expected = _looped_gradients(slices, looped, selected, wrt, weights)
    except UserCodeError:  # backward itself raises: the `backward` check reports that
        return f"{len(outputs)} output(s); gradients not compared, as backward raises"
    for index in selected:
        if not outputs[index].requires_grad:
            return context.result(
                VmapCheck.id,
                Status.FAIL,
                f"output {index} under torch.vmap carries no gradient, but the loop's does",
                output_index=index,
                hint="the vmap rule detaches its result (e.g. computes it under no_grad or "
                "outside the Function): likely call the Function's apply inside the rule",
                notes=notes,
            )
    loss = _weighted_sum([outputs[index] for index in selected], [weights[i] for i in selected])
    with user_code("backward under vmap"):
        got = torch.autograd.grad(loss, [batched[i] for i in wrt], allow_unused=True)
    for index, gradient in zip(wrt, got, strict=True):
        gradient = torch.zeros_like(batched[index]) if gradient is None else gradient
        what = f"the gradient of {context.describe_argument(index)}"
        problem = _compare_one(context, what, gradient.detach(), expected[index], notes)
        if problem is not None:
            hint = (
                "outputs under vmap are right but their gradient is not: likely the batched "
                "path's backward (the Function the vmap rule calls) is wrong, or backward is "
                "not batch-safe"
            )
            return replace(
                problem,
                input_index=index,
                input_name=context.target.argument_name(index),
                hint=problem.hint if problem.element is None else hint,
            )
    return f"{len(outputs)} output(s), and the gradients of {len(wrt)} argument(s)"


def _weights(
    context: CaseContext, outputs: Outputs, selected: Sequence[int]
) -> dict[int, torch.Tensor]:
    generator = context.generator(Salt.VMAP_WEIGHTS)
    return {
        index: seeded.normal(
            (BATCH, *outputs[index].shape), generator, outputs[index].device, outputs[index].dtype
        )
        for index in selected
    }


def _weighted_sum(outputs: Sequence[torch.Tensor], weights: Sequence[torch.Tensor]) -> torch.Tensor:
    total = sum((output * weight).sum() for output, weight in zip(outputs, weights, strict=True))
    assert isinstance(total, torch.Tensor)
    return total.real if total.is_complex() else total


def _looped_gradients(
    slices: Sequence[Arguments],
    looped: Sequence[Outputs],
    selected: Sequence[int],
    wrt: Sequence[int],
    weights: dict[int, torch.Tensor],
) -> dict[int, torch.Tensor]:
    """Each argument's gradient, one backward per batch entry, stacked along dim 0."""
    per_entry = []
    for entry, (arguments, outputs) in enumerate(zip(slices, looped, strict=True)):
        loss = _weighted_sum([outputs[i] for i in selected], [weights[i][entry] for i in selected])
        with user_code("backward"):
            grads = torch.autograd.grad(loss, [arguments[i] for i in wrt], allow_unused=True)
        per_entry.append(
            [
                torch.zeros_like(arguments[i]) if g is None else g.detach()
                for i, g in zip(wrt, grads, strict=True)
            ]
        )
    return {
        index: torch.stack([gradients[position] for gradients in per_entry])
        for position, index in enumerate(wrt)
    }


def _shape_hint(got: torch.Tensor, expected: torch.Tensor) -> str:
    if got.numel() == expected.numel():
        return (
            "the same number of entries in another shape: likely out_dims names the wrong "
            "dimension (the batch dimension sits elsewhere in the result)"
        )
    return (
        "likely the vmap rule drops the batch dimension, reduces over it, or batches an "
        "argument that should not be batched"
    )


def _value_hint(context: CaseContext, got: torch.Tensor, expected: torch.Tensor) -> str:
    tol = context.tolerance
    if not got.is_complex() and not expected.is_complex() and got.numel():
        got_sorted = got.to(torch.float64).reshape(-1).sort().values
        expected_sorted = expected.to(torch.float64).reshape(-1).sort().values
        if torch.allclose(
            got_sorted, expected_sorted, rtol=tol.rtol, atol=tol.atol, equal_nan=True
        ):
            return (
                "the right values in the wrong places: likely out_dims names the wrong "
                "dimension, or the batch dimension is moved and not moved back"
            )
    if all(torch.equal(got[0], got[entry]) for entry in range(1, BATCH)) and not all(
        torch.equal(expected[0], expected[entry]) for entry in range(1, BATCH)
    ):
        return (
            "every batch entry is the same: likely the vmap rule uses one entry for the whole batch"
        )
    if context.target.obj.vmap is not torch.autograd.Function.vmap:
        return (
            "likely the vmap staticmethod treats the batch dimension as data (e.g. a dim "
            "argument not shifted past the batch dimension, or a reduction over it)"
        )
    return (
        "likely forward does something the generated vmap rule cannot batch (e.g. `.item()`, "
        "`.data`, or writes into a captured tensor): write a vmap staticmethod instead"
    )
