"""How `func` says what it found: one failure per argument, in plain words, with its cause.

A TransformFinding is one transform's worst disagreement with finite differences; func_judge decides
whether it is the transform's own error, backward's error inherited, or a backward that does
not scale with grad_output, and the functions here word each kind.
"""

from __future__ import annotations

from dataclasses import dataclass

from gradverify.checks.func.transforms import GRAD, JACFWD, JACREV, PROJECTED, VJP
from gradverify.checks.shared.case import CaseContext
from gradverify.numerics.jacobian import element_words
from gradverify.results import Result, Status

_CAUSES = {
    GRAD: "torch.func.grad differentiates one argument at a time, so ctx.needs_input_grad "
    "is False for the others: likely backward reads the wrong needs_input_grad entry; "
    "otherwise setup_context saves something differently from forward (it runs again, on "
    "torch.func's wrapped tensors)",
    VJP: "often setup_context saves something differently from forward (it runs again, on "
    "torch.func's wrapped tensors)",
    JACREV: "jacrev runs backward under torch.vmap (a batch of one-hot grad_outputs): likely "
    "backward is not batch-safe, or something it calls has a wrong vmap rule",
    JACFWD: "jacfwd runs jvp under torch.vmap through the Function's vmap rule: likely the "
    "vmap rule is wrong, or jvp is not batch-safe",
}


@dataclass(frozen=True)
class TransformFinding:
    """One transform's worst disagreement with finite differences for one argument."""

    transform: str
    element: tuple[int, ...] | None  # None: a projection along a random direction
    output: tuple[int, tuple[int, ...]] | None  # the output element, when it matters
    value: float  # what the transform gives
    numerical: float
    mismatched: int = 1
    total: int = 1
    backward: float | None = None  # autograd's value there, when the transform departs from it
    part: str = ""  # for complex values: which part of which (complex_parts.Parts.entry_words)


def own_failure(
    context: CaseContext, check: str, index: int, findings: list[TransformFinding]
) -> Result:
    """One failure for every transform that gets argument `index` wrong on its own,
    shown at the most precise finding (an entry of a full Jacobian, if any)."""
    precise = [f for f in findings if f.transform not in PROJECTED] or findings
    shown = precise[0]
    backward = shown.backward if shown.backward is not None else float("nan")
    names = [f.transform for f in findings]
    verb = "gives" if len(names) == 1 else "give"
    message = (
        f"{joined(names)} {verb} a wrong gradient of {context.describe_argument(index)} "
        f"{where(shown)}: {shown.transform.removeprefix('torch.func.')} "
        f"{shown.value:.6g}, finite differences {shown.numerical:.6g}, backward {backward:.6g}"
    )
    if shown.element is not None:
        message += f" ({shown.mismatched} of {shown.total} entries off)"
    jvp_failed = any(r.check == "jvp" and r.failed for r in context.earlier)
    only_jacfwd = names == [JACFWD]
    return context.result(
        check, Status.FAIL, message,
        input_index=index, element=shown.element,
        output_index=shown.output[0] if shown.output else None,
        analytical=shown.value, numerical=shown.numerical,
        max_abs_error=abs(shown.value - shown.numerical),
        mismatched=shown.mismatched if shown.element is not None else None,
        total=shown.total if shown.element is not None else None,
        value_labels=(shown.transform, "finite differences"),
        hint=_own_hint(names, shown, context.tolerance.atol, context.tolerance.rtol),
        notes=_weighting_note(shown.transform),
        same_as="jvp" if only_jacfwd and jvp_failed else None,
    )  # fmt: skip


def nonlinear_failure(
    context: CaseContext, check: str, index: int, finding: TransformFinding
) -> Result:
    """backward ignores (or does not scale with) grad_output for argument `index`."""
    gradcheck_failed = any(r.check == "gradcheck" and r.failed for r in context.earlier)
    message = (
        f"backward's gradient of {context.describe_argument(index)} does not scale with "
        f"grad_output: {finding.transform}, which weights the outputs at random, gives "
        f"{finding.value:.6g} {where(finding)}, finite differences "
        f"{finding.numerical:.6g}"
    )
    return context.result(
        check, Status.FAIL, message,
        input_index=index, element=finding.element,
        analytical=finding.value, numerical=finding.numerical,
        max_abs_error=abs(finding.value - finding.numerical),
        value_labels=(finding.transform, "finite differences"),
        hint="backward must be linear in grad_output: multiply each gradient by "
        "grad_output (twice the grad_output gives a gradient that is not twice as large); "
        "finite_difference, with one-hot grad_outputs of 1, cannot see it",
        notes=_weighting_note(finding.transform),
        same_as="gradcheck" if gradcheck_failed else None,
    )  # fmt: skip


def inherited_failure(
    context: CaseContext, check: str, index: int, findings: list[TransformFinding]
) -> Result:
    """The transforms give backward's gradient of argument `index`, and backward is wrong."""
    first = findings[0]
    names = list(dict.fromkeys(f.transform.removeprefix("torch.func.") for f in findings))
    fd_failed = any(
        r.check == "finite_difference" and r.input_index == index and r.failed
        for r in context.earlier
    )
    message = (
        f"torch.func {', '.join(names)} give backward's gradient of "
        f"{context.describe_argument(index)}, which disagrees with finite differences "
        f"{where(first)}: torch.func {first.value:.6g}, finite differences "
        f"{first.numerical:.6g}"
    )
    return context.result(
        check,
        Status.FAIL,
        message,
        input_index=index,
        element=first.element,
        analytical=first.value,
        numerical=first.numerical,
        value_labels=(first.transform, "finite differences"),
        hint="the transforms agree with autograd's backward, so what finite_difference "
        "finds (a wrong backward, or precision forward loses) is their problem too: "
        "fix it there, and torch.func follows",
        same_as="finite_difference" if fd_failed else None,
    )


def where(finding: TransformFinding) -> str:
    """Where a finding lies: the element (and output element), or the projection."""
    if finding.element is None:
        weighting = "wᵀJu" if finding.transform == GRAD else "vᵀJu"
        return f"along a random direction u (the projection {weighting})"
    words = f"at {element_words(finding.element)}"
    if finding.output is not None:
        output_index, output_element = finding.output
        words += f", output {output_index} element {list(output_element)}"
    return f"{words}, {finding.part}" if finding.part else words


def joined(names: list[str]) -> str:
    """`torch.func.grad`, or `torch.func.grad, vjp and jacrev`."""
    if len(names) == 1:
        return names[0]
    short = [name.removeprefix("torch.func.") for name in names]
    return f"torch.func.{', '.join(short[:-1])} and {short[-1]}"


def _weighting_note(transform: str) -> tuple[str, ...]:
    if transform == GRAD:
        return ("torch.func.grad differentiates a seeded random weighting Σ w·y of the outputs",)
    if transform == VJP:
        return ("torch.func.vjp pulls back a seeded random cotangent v",)
    return ()


def _own_hint(names: list[str], shown: TransformFinding, atol: float, rtol: float) -> str:
    """The likely cause, from which transforms depart from backward."""
    backward = shown.backward if shown.backward is not None else float("nan")
    if abs(backward - shown.numerical) <= atol + rtol * abs(shown.numerical):
        lead = (
            "torch.func gives a different gradient than autograd's backward (which agrees "
            "with finite differences here)"
        )
    else:
        lead = (
            "torch.func gives a different gradient than autograd's backward, and neither "
            "agrees with finite differences"
        )
    if len(names) == 1:
        return f"{lead}: {_CAUSES[names[0]]}"
    return (
        f"{lead}: setup_context runs again under torch.func, on its wrapped tensors, so "
        "anything it does differently from forward, or twice (an in-place change of what "
        "it saves), shows here"
    )
