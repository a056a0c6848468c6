"""`layouts`: the same values in other layouts give the same outputs and gradients.

Each case is run as declared (the baseline) and again in variant layouts: one tensor argument
at a time with other strides (non-contiguous), and one argument at a time with requires_grad
off. Outputs and the gradients that are still asked for must match the baseline. Where
requires_grad is off, backward computing that gradient anyway is wasted work: a warning,
once per Function in a run (folding.once_per_function); the spec's `wasted_work: false`
turns it off, not the variant.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Literal

import torch

from gradverify.checks.layouts.wasted_work import computes_unneeded_gradient, wasted_work_warning
from gradverify.checks.shared.backward_call import (
    Run,
    autograd_gradients,
    same_random_numbers,
    seeded_grad_outputs,
)
from gradverify.checks.shared.case import (
    CaseContext,
    crash_result,
    dtype_name,
    no_gradient_to_check,
    not_run,
)
from gradverify.inputs import differentiable_indices, fresh_copies
from gradverify.numerics.compare import wide_dtype
from gradverify.numerics.jacobian import unravel
from gradverify.numerics.salts import Salt
from gradverify.results import Result, Status
from gradverify.usercode import UserCodeError, call_forward

VariantKind = Literal["non_contiguous", "requires_grad_off"]
NON_CONTIGUOUS: Final = "non_contiguous"
REQUIRES_GRAD_OFF: Final = "requires_grad_off"

PROBE_SEED_OFFSET = 1  # a second baseline under another seed tells random Functions apart
ULPS = 8  # a change of layout may reorder a sum: allow a few units of the dtype's precision


@dataclass(frozen=True)
class Variant:
    """One argument in another layout; every other argument as declared."""

    kind: VariantKind
    input_index: int


@dataclass(frozen=True)
class Difference:
    """Where a variant's output or gradient first departs from the baseline's."""

    what: str  # "output 0", "gradient of argument 1 (w)"
    detail: str
    fields: dict[str, Any]


class LayoutsCheck:
    """Non-contiguous arguments and requires_grad off: same outputs and gradients as declared."""

    id: ClassVar[str] = "layouts"

    def run(self, context: CaseContext) -> list[Result]:
        nothing = no_gradient_to_check(context, self.id)
        if nothing is not None:
            return [nothing]
        if any(r.failed and r.check == "backward" for r in context.earlier):
            # Layouts compare backward's runs: one that already fails (raises, writes a saved
            # output in place) makes every difference here a follow-on of it.
            return [not_run(context, self.id, "backward")]
        variants = plan_variants(context)
        if not variants:
            return [context.result(self.id, Status.SKIP, _nothing_to_try(context))]
        try:
            baseline = _run(context, fresh_copies(context.arguments))
            probe = _run(
                context, fresh_copies(context.arguments), baseline.grad_outputs, PROBE_SEED_OFFSET
            )
        except UserCodeError as error:
            # Stopped by forward's or backward's failure (said once, there), else our own.
            return [crash_result(context, self.id, error)]
        random = _first_difference(context, baseline, probe) is not None
        failures: list[Result] = []
        wasted: list[int] = []
        for variant in variants:
            outcome = self._try(context, variant, baseline, random)
            if isinstance(outcome, Result):
                failures.append(outcome)
            elif outcome is not None:
                wasted.append(outcome)
        # One warning per case, however many arguments: the fix is one habit in backward.
        warnings = [wasted_work_warning(context, self.id, wasted)] if wasted else []
        if failures:
            return [*failures, *warnings]
        return [
            context.result(self.id, Status.PASS, _summary(context, variants, random)),
            *warnings,
        ]

    def _try(
        self, context: CaseContext, variant: Variant, baseline: Run, random: bool
    ) -> Result | int | None:
        """A fail if the variant crashes or differs; the argument's index if backward computes
        its gradient although it is not needed (wasted work); else None."""
        condition = _condition(context, variant)
        try:
            run = _run(context, variant_arguments(context, variant), baseline.grad_outputs)
        except UserCodeError as error:
            return context.result(
                self.id,
                Status.FAIL,
                f"fails {condition}: {error}",
                input_index=variant.input_index,
                hint=_crash_hint(variant, error),
                details=error.frames,
                **error.source,
            )
        difference = None if random else _first_difference(context, baseline, run)
        if difference is not None:
            fields = {"input_index": variant.input_index, **difference.fields}
            return context.result(
                self.id,
                Status.FAIL,
                f"gives a different {difference.what} {condition}: {difference.detail}",
                hint=_difference_hint(variant),
                **fields,
            )
        if (
            variant.kind == REQUIRES_GRAD_OFF
            and context.spec.wasted_work
            and computes_unneeded_gradient(
                context, variant.input_index, run.outputs, run.arguments, run.grad_outputs
            )
        ):
            return variant.input_index
        return None


def plan_variants(context: CaseContext) -> list[Variant]:
    """The variants the spec asks for that apply to this case's arguments."""
    wanted = context.spec.variants
    variants: list[Variant] = []
    if wanted.non_contiguous:
        variants += [
            Variant(NON_CONTIGUOUS, index)
            for index, argument in enumerate(context.arguments)
            if isinstance(argument, torch.Tensor)
            and argument.dim() >= 2
            and non_contiguous(argument) is not None
        ]
    if wanted.requires_grad_off:
        variants += [
            Variant(REQUIRES_GRAD_OFF, index) for index in differentiable_indices(context.arguments)
        ]
    return variants


def non_contiguous(tensor: torch.Tensor) -> torch.Tensor | None:
    """The same values and requires_grad in a non-contiguous leaf, or None if none exists.

    A transposed copy transposed back, as `x.t()` hands a Function; where size-1 dims make
    that contiguous again, every other element of a buffer twice as long.
    """
    values = tensor.detach()
    transposed = values.transpose(-1, -2).contiguous().transpose(-1, -2)
    candidate = _strided_slice(values) if transposed.is_contiguous() else transposed
    if candidate is None or candidate.is_contiguous():
        return None
    return candidate.requires_grad_(tensor.requires_grad)


def _strided_slice(values: torch.Tensor) -> torch.Tensor | None:
    long_dims = [dim for dim, size in enumerate(values.shape) if size > 1]
    if not long_dims:
        return None
    dim = long_dims[-1]
    shape = list(values.shape)
    shape[dim] *= 2
    buffer = torch.zeros(shape, dtype=values.dtype, device=values.device)
    index: list[slice] = [slice(None)] * values.dim()
    index[dim] = slice(None, None, 2)
    strided = buffer[tuple(index)]
    strided.copy_(values)
    return strided


def variant_arguments(context: CaseContext, variant: Variant) -> tuple[Any, ...]:
    """Fresh copies of the case's arguments, with the variant's argument changed."""
    arguments = list(fresh_copies(context.arguments))
    argument = arguments[variant.input_index]
    if variant.kind == NON_CONTIGUOUS:
        changed = non_contiguous(argument)
        assert changed is not None, "planned variants have a non-contiguous layout"
        arguments[variant.input_index] = changed
    else:
        arguments[variant.input_index] = argument.requires_grad_(False)
    return tuple(arguments)


def _run(
    context: CaseContext,
    arguments: tuple[Any, ...],
    grad_outputs: Sequence[torch.Tensor | None] | None = None,
    seed_offset: int = 0,
) -> Run:
    """forward, then autograd's gradients for `grad_outputs` (seeded ones if None).

    The RNG is reseeded for every run, so that a Function drawing random numbers draws the
    same ones in the baseline and in each variant.
    """
    with same_random_numbers(context.seed + seed_offset):
        outputs = call_forward(context.target.call, arguments)
        if grad_outputs is None:
            grad_outputs = seeded_grad_outputs(
                outputs, context.generator(Salt.LAYOUTS_GRAD_OUTPUTS)
            )
        gradients = _gradients(outputs, arguments, grad_outputs)
    return Run(arguments, outputs, tuple(grad_outputs), gradients)


def _gradients(
    outputs: Sequence[Any], arguments: Sequence[Any], grad_outputs: Sequence[torch.Tensor | None]
) -> dict[int, torch.Tensor | None]:
    wrt = differentiable_indices(arguments)
    # Outputs that differ in shape or dtype from the baseline are reported by the comparison.
    pairs = [
        (output, grad.clone())
        for output, grad in zip(outputs, grad_outputs, strict=False)
        if isinstance(output, torch.Tensor)
        and output.requires_grad
        and grad is not None
        and (output.shape, output.dtype) == (grad.shape, grad.dtype)
    ]
    return autograd_gradients(pairs, arguments, wrt, retain_graph=True)


def _first_difference(context: CaseContext, baseline: Run, run: Run) -> Difference | None:
    """The first output, then the first gradient, of `run` that departs from the baseline."""
    if len(run.outputs) != len(baseline.outputs):
        detail = f"{len(run.outputs)} instead of {len(baseline.outputs)}"
        return Difference("number of outputs", detail, {})
    for index, (expected, got) in enumerate(zip(baseline.outputs, run.outputs, strict=True)):
        if isinstance(expected, torch.Tensor) and isinstance(got, torch.Tensor):
            difference = _tensor_difference(
                context, f"output {index}", expected, got, output_index=index
            )
            if difference is not None:
                return difference
    for index in run.gradients:
        what = f"gradient of {context.describe_argument(index)}"
        # The element indexes this argument's gradient, so the result names this argument.
        difference = _tensor_difference(
            context, what, baseline.gradient(index), run.gradient(index), input_index=index
        )
        if difference is not None:
            return difference
    return None


def _tensor_difference(
    context: CaseContext, what: str, expected: torch.Tensor, got: torch.Tensor, **fields: Any
) -> Difference | None:
    """How `got` departs from `expected` in plain words, with the result's fields."""
    if got.shape != expected.shape:
        return Difference(
            what, f"shape {list(got.shape)} instead of {list(expected.shape)}", fields
        )
    if got.dtype != expected.dtype:
        return Difference(
            what, f"{dtype_name(got.dtype)} instead of {dtype_name(expected.dtype)}", fields
        )
    wide = wide_dtype(expected)
    expected_values, got_values = expected.detach().to(wide), got.detach().to(wide)
    atol, rtol = _tolerances(context, expected)
    error = (got_values - expected_values).abs()
    error = torch.where(torch.isnan(error), torch.full_like(error, float("inf")), error)
    both_nan = torch.isnan(got_values) & torch.isnan(expected_values)
    same = (got_values == expected_values) | both_nan
    off = ~same & ~(error <= atol + rtol * expected_values.abs())
    if not bool(off.any()):
        return None
    flat = int(torch.argmax(torch.where(off, error, torch.full_like(error, -1.0))).item())
    element = unravel(flat, expected.shape)
    mismatched, total = int(off.sum().item()), expected.numel()
    detail = (
        f"element {list(element)} is {got_values.reshape(-1)[flat].item():.6g} instead of "
        f"{expected_values.reshape(-1)[flat].item():.6g} ({mismatched} of {total} entries off)"
    )
    fields.update(
        element=element,
        max_abs_error=float(error[off].max().item()),
        mismatched=mismatched,
        total=total,
    )
    return Difference(what, detail, fields)


def _tolerances(context: CaseContext, expected: torch.Tensor) -> tuple[float, float]:
    """The spec's atol and rtol, widened to a few units of a low-precision dtype."""
    atol, rtol = context.tolerance.atol, context.tolerance.rtol
    if not (expected.is_floating_point() or expected.is_complex()):
        return atol, rtol
    finite = expected.detach()[torch.isfinite(expected.detach())]
    scale = float(finite.abs().max().item()) if finite.numel() else 0.0
    floor = ULPS * torch.finfo(expected.dtype).eps
    return max(atol, floor * scale), max(rtol, floor)


def _condition(context: CaseContext, variant: Variant) -> str:
    describe = context.describe_argument(variant.input_index)
    if variant.kind == NON_CONTIGUOUS:
        return f"for a non-contiguous {describe}"
    return f"when {describe} has requires_grad off"


def _crash_hint(variant: Variant, error: UserCodeError) -> str:
    if variant.kind == REQUIRES_GRAD_OFF:
        return (
            "likely code that assumes every argument requires grad: a gradient left unassigned "
            "when ctx.needs_input_grad[i] is False, or a None used as a tensor"
        )
    if "view" in str(error.error):
        return "a .view() needs compatible strides: use .reshape(), or call .contiguous() first"
    return "the Function assumes contiguous inputs: call .contiguous() on them in forward"


def _difference_hint(variant: Variant) -> str:
    if variant.kind == REQUIRES_GRAD_OFF:
        return (
            "likely a branch on ctx.needs_input_grad (or requires_grad) that changes what is "
            "computed for the other arguments"
        )
    return (
        "likely code that reads memory as if it were contiguous (as_strided, data_ptr, a C++ or "
        "CUDA kernel): call .contiguous() on the inputs in forward"
    )


def _summary(context: CaseContext, variants: Sequence[Variant], random: bool) -> str:
    groups = []
    for kind, label in (
        (NON_CONTIGUOUS, "non-contiguous"),
        (REQUIRES_GRAD_OFF, "requires_grad off for"),
    ):
        names = [context.describe_argument(v.input_index) for v in variants if v.kind == kind]
        if names:
            groups.append(f"{label} {', '.join(names)}")
    plural = "variant" if len(variants) == 1 else "variants"
    summary = f"{len(variants)} {plural}: {'; '.join(groups)}"
    if random:
        summary += " (outputs change with the seed, so only crashes were checked)"
    return summary


def _nothing_to_try(context: CaseContext) -> str:
    wanted = context.spec.variants
    if not wanted.non_contiguous and not wanted.requires_grad_off:
        return (
            "every variant is turned off in the spec (variants: non_contiguous, requires_grad_off)"
        )
    reasons = [
        "no tensor argument of rank >= 2 to make non-contiguous"
        if wanted.non_contiguous
        else "non_contiguous is turned off in the spec",
        "no argument requires grad"
        if wanted.requires_grad_off
        else "requires_grad_off is turned off in the spec",
    ]
    return f"no variant to try: {'; '.join(reasons)}"
