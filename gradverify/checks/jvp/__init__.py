"""`jvp`: the Function's forward-mode derivative against central differences along random tangents.

For each differentiable argument alone, then for all of them at once, a seeded random
tangent u goes in through `torch.autograd.forward_ad`; the output tangents the Function's
`jvp` produces are compared with (f(x + eps*u) - f(x - eps*u)) / 2eps, in float64. Where
the one-sided slopes along u disagree (a kink) any value between them is accepted.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, ClassVar

import torch
import torch.autograd.forward_ad as forward_ad

from gradverify.checks.jvp.crash import jvp_crash
from gradverify.checks.shared.case import CaseContext, dtype_name, promotion_notes
from gradverify.checks.shared.overrides import defines_jvp
from gradverify.checks.shared.own_precision import needs_float64
from gradverify.inputs import differentiable_indices, fresh_copies
from gradverify.numerics import seeded
from gradverify.numerics.compare import compare
from gradverify.numerics.jacobian import OutputLayout, differentiable_outputs
from gradverify.numerics.kinks import nondifferentiable_rows
from gradverify.numerics.noise import faint_rows, noise_rows, reach, rounding_hint
from gradverify.numerics.salts import Salt
from gradverify.numerics.sampling import sample
from gradverify.results import Result, Status
from gradverify.usercode import UserCodeError, call_forward, user_code

NO_JVP = "the Function defines no jvp (forward-mode AD)"
NOT_A_FUNCTION = "not a torch.autograd.Function: there is no jvp of its own to check"
NO_OP_JVP = (
    "a custom op has no forward-mode AD (jvp) rule unless one is registered, and "
    "register_autograd registers only a backward: there is no jvp to check"
)
SURROGATE = (
    "gradient: surrogate: jvp is an intentional non-derivative, so it is not compared with "
    "finite differences"
)
Tangents = dict[int, torch.Tensor]  # argument index -> tangent


class JvpCheck:
    """Forward-mode AD through the Function's jvp, per argument and all together."""

    id: ClassVar[str] = "jvp"

    def run(self, context: CaseContext) -> list[Result]:
        if not defines_jvp(context.target):
            reason = NO_JVP if context.target.is_function else NOT_A_FUNCTION
            reason = NO_OP_JVP if context.target.op_name is not None else reason
            return [context.result(self.id, Status.SKIP, reason, applies=False)]
        if context.spec.gradient == "surrogate":
            return [context.result(self.id, Status.SKIP, SURROGATE, applies=False)]
        wrt = differentiable_indices(context.arguments)
        if not wrt:
            return [context.result(self.id, Status.SKIP, "no argument requires grad")]
        kernel = needs_float64(context, self.id)  # compared with float64 differences
        if kernel is not None:
            return [kernel]
        arguments = fresh_copies(context.arguments, torch.float64)
        notes = promotion_notes(context, context.arguments)
        try:
            return self._judge_all(context, arguments, wrt, notes)
        except UserCodeError as error:
            return [jvp_crash(context, self.id, error)]

    def _judge_all(
        self, context: CaseContext, arguments: Sequence[Any], wrt: list[int], notes: tuple[str, ...]
    ) -> list[Result]:
        layout = _layout(context, arguments)
        if layout is None:
            return [
                context.result(self.id, Status.SKIP, "no output is differentiable", notes=notes)
            ]
        results = []
        for index in wrt:
            tangent = _random_tangent(arguments[index], context.generator(Salt.JVP_TANGENT + index))
            results.append(self._judge(context, arguments, {index: tangent}, layout, notes))
        if len(wrt) > 1 and not any(result.failed for result in results):
            together = {
                index: _random_tangent(
                    arguments[index], context.generator(Salt.JVP_JOINT_TANGENT + index)
                )
                for index in wrt
            }
            combined = self._judge(context, arguments, together, layout, notes)
            if combined.failed:
                results.append(combined)
        return results

    def _judge(
        self,
        context: CaseContext,
        arguments: Sequence[Any],
        tangents: Tangents,
        layout: OutputLayout,
        notes: tuple[str, ...],
    ) -> Result:
        """One direction's verdict: jvp's output tangents against central differences."""
        alone = next(iter(tangents)) if len(tangents) == 1 else None
        analytical = _forward_mode(context, arguments, tangents, layout)
        if isinstance(analytical, Result):
            name = context.target.argument_name(alone) if alone is not None else None
            return replace(analytical, input_index=alone, input_name=name)
        differences = _differences(context, arguments, tangents, layout)
        atol, rtol = _tolerances(context, differences.central)
        first = compare(analytical.unsqueeze(1), differences.central.unsqueeze(1), atol, rtol)
        off = first.off.squeeze(1)
        noise = _rounding_noise(context, arguments, tangents, layout, off, analytical, (atol, rtol))
        kinks = differences.kinks(analytical, off, atol, rtol) & ~noise
        numerical = torch.where(kinks, analytical, differences.central)  # kinks are excused
        comparison = compare(analytical.unsqueeze(1), numerical.unsqueeze(1), atol, rtol)
        direction = (
            f"a tangent of {context.describe_argument(alone)}"
            if alone is not None
            else "a tangent in every argument at once"
        )
        if kinks.any():
            notes += (
                f"{int(kinks.sum())} of {kinks.numel()} entries sit at non-differentiable points "
                "(the one-sided slopes differ) and are excused",
            )
        fields: dict[str, Any] = dict(
            input_index=alone,
            max_abs_error=comparison.max_abs_error,
            max_rel_error=comparison.max_rel_error,
            mismatched=comparison.mismatched,
            total=comparison.total,
            notes=notes,
        )
        if comparison.ok and kinks.any():
            return _kink_warning(context, direction, layout, analytical, differences, kinks, fields)
        if comparison.ok:
            return context.result(
                self.id,
                Status.PASS,
                f"jvp along {direction} matches central differences ({comparison.total} entries)",
                **fields,
            )
        output_index, element = layout.locate(comparison.row)
        rows = _rows_of(layout, output_index)
        message = (
            f"forward-mode derivative along {direction} is wrong at output {output_index} "
            f"element {list(element)}: jvp gives {comparison.analytical + 0.0:.6g}, central "
            f"differences {comparison.numerical + 0.0:.6g} ({comparison.mismatched} of "
            f"{comparison.total} entries off)"
        )
        return context.result(
            self.id,
            Status.FAIL,
            message,
            output_index=output_index,
            element=element,
            analytical=comparison.analytical + 0.0,
            numerical=comparison.numerical + 0.0,
            hint=_noise_hint(comparison.off.squeeze(1), noise)
            or _hint(context, analytical[rows], numerical[rows], alone, atol),
            **fields,
        )


@dataclass(frozen=True)
class Differences:
    """Finite differences of the flattened outputs along a tangent u, with step eps."""

    central: torch.Tensor  # (f(x + eps*u) - f(x - eps*u)) / 2eps
    right: torch.Tensor  # (f(x + eps*u) - f(x)) / eps
    left: torch.Tensor  # (f(x) - f(x - eps*u)) / eps

    def kinks(
        self, analytical: torch.Tensor, off: torch.Tensor, atol: float, rtol: float
    ) -> torch.Tensor:
        """Off entries at a non-differentiable point: the one-sided slopes disagree, and jvp's
        value lies between them (any value there is a valid one-sided choice)."""
        if analytical.is_complex() or self.central.is_complex():
            return torch.zeros_like(off)
        scale = atol + rtol * torch.maximum(self.right.abs(), self.left.abs())
        jump = (self.right - self.left).abs() > 10 * scale
        low = torch.minimum(self.left, self.right) - scale
        high = torch.maximum(self.left, self.right) + scale
        return off & jump & (analytical >= low) & (analytical <= high)


def _kink_warning(
    context: CaseContext,
    direction: str,
    layout: OutputLayout,
    analytical: torch.Tensor,
    differences: Differences,
    kinks: torch.Tensor,
    fields: dict[str, Any],
) -> Result:
    """Every mismatch sits at a kink: correct code can do no better there, so a warning."""
    row = int(kinks.nonzero()[0].item())
    output_index, element = layout.locate(row)
    message = (
        f"jvp along {direction} meets a non-differentiable point at output {output_index} "
        f"element {list(element)}: left slope {differences.left[row].item() + 0.0:.6g}, right "
        f"slope {differences.right[row].item() + 0.0:.6g}, and jvp's "
        f"{analytical[row].item() + 0.0:.6g} lies between them"
    )
    return context.result(
        JvpCheck.id,
        Status.WARN,
        message,
        output_index=output_index,
        element=element,
        analytical=float(analytical[row].item()) + 0.0,  # no -0 in reports
        numerical=float(differences.central[row].item()) + 0.0,
        hint="a kink (like ReLU at 0) where any value between the one-sided slopes is a valid "
        "choice; move the case's inputs away from it to check the derivative there",
        **fields,
    )


def _layout(context: CaseContext, arguments: Sequence[Any]) -> OutputLayout | None:
    """The differentiable outputs of a plain forward call: the ones whose tangents matter."""
    outputs = call_forward(context.target.call, fresh_copies(arguments))
    selected = differentiable_outputs(outputs)
    if not selected:
        return None
    return OutputLayout(tuple(i for i, _ in selected), tuple(tuple(o.shape) for _, o in selected))


def _rows_of(layout: OutputLayout, output_index: int) -> slice:
    """Where output `output_index` sits in the flattened, concatenated outputs."""
    start = 0
    for index, shape in zip(layout.indices, layout.shapes, strict=True):
        size = int(torch.Size(shape).numel())
        if index == output_index:
            return slice(start, start + size)
        start += size
    raise IndexError(output_index)


def _random_tangent(argument: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    return seeded.normal(argument.shape, generator, argument.device, argument.dtype)


def _forward_mode(
    context: CaseContext, arguments: Sequence[Any], tangents: Tangents, layout: OutputLayout
) -> torch.Tensor | Result:
    """The output tangents jvp gives, flattened and concatenated; or a wrong tangent dtype."""
    primals = fresh_copies(arguments)
    with _quiet_dual_level():
        duals = [
            forward_ad.make_dual(argument, tangents[index]) if index in tangents else argument
            for index, argument in enumerate(primals)
        ]
        with user_code("jvp"):
            outputs = context.target.call(*duals)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pieces = []
        for index in layout.indices:
            primal, tangent = forward_ad.unpack_dual(outputs[index])
            if tangent is None:  # no tangent is a zero tangent
                tangent = torch.zeros_like(primal)
            elif tangent.dtype != primal.dtype:
                return _dtype_problem(context, index, tangent, primal)
            pieces.append(tangent.detach().reshape(-1).clone())
    return torch.cat(pieces)


@contextmanager
def _quiet_dual_level() -> Iterator[None]:
    """forward_ad.dual_level, without the deprecation warnings torch's first use emits."""
    with warnings.catch_warnings():
        # Entering the first dual level scripts torch's jvp decompositions with torch.jit.
        warnings.filterwarnings("ignore", ".*torch.jit.script.*", DeprecationWarning)
        with forward_ad.dual_level():
            yield


def _rounding_noise(
    context: CaseContext,
    arguments: Sequence[Any],
    tangents: Tangents,
    layout: OutputLayout,
    off: torch.Tensor,
    analytical: torch.Tensor,
    tolerances: tuple[float, float],
) -> torch.Tensor:
    """Off entries that are rounding noise of forward along the tangents (`noise.py`), which
    the one-sided slopes would otherwise take for kinks."""
    if not bool(off.any()) or analytical.is_complex():
        return torch.zeros_like(off)
    eps, (atol, rtol) = context.tolerance.eps, tolerances

    def line(t: float) -> torch.Tensor:
        shifted = list(fresh_copies(arguments))
        for index, tangent in tangents.items():
            moved = arguments[index].detach() + t * tangent
            shifted[index] = moved.requires_grad_(arguments[index].requires_grad)
        with torch.no_grad():
            outputs = call_forward(context.target.call, shifted)
        return torch.cat(
            [outputs[i].detach().reshape(-1).to(torch.float64) for i in layout.indices]
        )

    values = sample(line, eps)
    if values.is_complex() or values.shape[1] != off.numel():
        return torch.zeros_like(off)
    central = (values[-1] - values[0]) / (2 * eps)
    flagged = nondifferentiable_rows(values, eps, atol + rtol * central.abs())
    # rounding x to float32 moves f by 2^-24·|x|·|∂f/∂x| = 2^-24·|x/u|·|slope along u|
    x_scale = max(
        float((arguments[i].detach().abs() / u.abs().clamp_min(1e-2)).max()) if u.numel() else 0.0
        for i, u in tangents.items()
    )
    faint = flagged & off & faint_rows(values, eps, x_scale)
    noise = noise_rows(line, values, eps, faint, atol, rtol)
    if not bool(noise.any()):
        return noise
    quiet = off & ~flagged & ((analytical - central).abs() <= reach(values, eps, x_scale) / eps)
    return noise | faint | quiet  # once noise is seen, faint roughness is more of it


def _noise_hint(off: torch.Tensor, noise: torch.Tensor) -> str | None:
    """The lost-precision hint when every entry off is rounding noise of forward."""
    if not bool(off.any()) or bool((off & ~noise).any()):
        return None
    return rounding_hint(int(off.sum()))


def _differences(
    context: CaseContext, arguments: Sequence[Any], tangents: Tangents, layout: OutputLayout
) -> Differences:
    """Central and one-sided differences of the differentiable outputs along the tangents."""
    eps = context.tolerance.eps

    def evaluate(sign: float) -> torch.Tensor:
        shifted = list(fresh_copies(arguments))
        for index, tangent in tangents.items():
            moved = arguments[index].detach() + sign * eps * tangent
            shifted[index] = moved.requires_grad_(arguments[index].requires_grad)
        with torch.no_grad():
            outputs = call_forward(context.target.call, shifted)
        return torch.cat([outputs[i].detach().reshape(-1) for i in layout.indices])

    plus, center, minus = evaluate(1.0), evaluate(0.0), evaluate(-1.0)
    return Differences(
        central=(plus - minus) / (2 * eps), right=(plus - center) / eps, left=(center - minus) / eps
    )


def _tolerances(context: CaseContext, numerical: torch.Tensor) -> tuple[float, float]:
    """(atol, rtol): the spec's, or for `gradient: approximate` a relative max error figure."""
    tol = context.tolerance
    if context.spec.gradient != "approximate":
        return tol.atol, tol.rtol
    scale = float(numerical.abs().max().item()) if numerical.numel() else 0.0
    return tol.atol + context.spec.allowed_error * scale, 0.0


def _dtype_problem(
    context: CaseContext, index: int, tangent: torch.Tensor, primal: torch.Tensor
) -> Result:
    got, expected = dtype_name(tangent.dtype), dtype_name(primal.dtype)
    return context.result(
        JvpCheck.id,
        Status.FAIL,
        f"jvp returned a {got} tangent for output {index}, which is {expected}",
        output_index=index,
        hint="forward-mode AD keeps the tangent's dtype, so precision is silently lost; compute "
        "the tangent in the output's dtype",
    )


def _hint(
    context: CaseContext,
    analytical: torch.Tensor,
    numerical: torch.Tensor,
    alone: int | None,
    atol: float,
) -> str | None:
    """The likely cause, from one output's errors and from what backward did."""
    if alone is None:
        return (
            "each argument's tangent alone gives the right derivative, but not all of them at "
            "once: likely jvp combines the tangents wrongly"
        )
    cause = _pattern(analytical, numerical, atol, context, alone)
    backward_ok = any(
        r.check == "finite_difference" and r.input_index == alone and r.status is Status.PASS
        for r in context.earlier
    )
    if backward_ok:
        lead = "backward's gradient of this argument matches finite differences, so the bug is in jvp alone"
        return f"{cause}; {lead}" if cause else lead
    return cause


def _pattern(
    analytical: torch.Tensor,
    numerical: torch.Tensor,
    atol: float,
    context: CaseContext,
    index: int,
) -> str | None:
    """A zero tangent, a flipped sign or a constant factor, when every entry shows it."""
    if analytical.is_complex() or numerical.is_complex():
        return None
    if float(analytical.abs().max().item()) <= atol:
        return (
            f"jvp gives a zero tangent along {context.describe_argument(index)}: likely its "
            "tangent is ignored (a missing term in jvp)"
        )
    significant = numerical.abs() > 10 * atol
    if not significant.any():
        return None
    ratios = analytical[significant] / numerical[significant]
    factor = float(ratios.median().item())
    if abs(factor - 1) <= 1e-3 or not bool(((ratios - factor).abs() <= 1e-3 * abs(factor)).all()):
        return None
    if abs(factor + 1) <= 1e-3:
        return "the forward-mode derivative has the opposite sign: likely a flipped sign in jvp"
    return (
        f"off by a constant factor {_fraction(factor)} (jvp = {_fraction(factor)} × central "
        "differences): likely a missing or extra constant in jvp"
    )


def _fraction(value: float) -> str:
    fraction = Fraction(value).limit_denominator(64)
    if abs(float(fraction) - value) > 1e-3 * abs(value):
        return f"{value:.4g}"
    return str(fraction)
