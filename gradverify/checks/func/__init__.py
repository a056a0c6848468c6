"""`func`: torch.func's transforms over the Function agree with finite differences.

torch.func runs a Function its own way: `grad` and `vjp` call forward, setup_context and
backward on wrapped tensors (setup_context runs again, on the wrapper), `jacrev` runs backward
under torch.vmap with a batch of one-hot grad_outputs, and `jacfwd` runs jvp under torch.vmap
and needs the Function's vmap rule. Each can break, or give another gradient, while eager
autograd is right. This is torch's `check_batched_grad` idea, in gradverify's report.

What each transform needs (torch/_functorch/autograd_function.py): every one needs the
setup_context style; `grad`, `vjp` and `jacrev` need nothing more (jacrev batches backward's
plain operations, not the Function); `jacfwd` needs a jvp staticmethod and a vmap rule
(`generate_vmap_rule = True` or a vmap staticmethod), which torch asks for even when the
primal is not batched.

Full mode compares every Jacobian entry with `numerical_jacobian`'s central differences, with
kinks and rounding noise handled as `finite_difference` handles them. Randomized mode
(large inputs) compares grad's and vjp's projections along a random direction instead, and
leaves out the full Jacobians of jacrev and jacfwd.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import ClassVar

import torch

from gradverify.checks.func.findings import joined
from gradverify.checks.func.judge import Judge, verdicts
from gradverify.checks.func.transforms import GRAD, JACFWD, JACREV, VJP, crash_hint, transforms_for
from gradverify.checks.shared.case import CaseContext, crash_result, promotion_notes
from gradverify.checks.shared.modes import resolve_mode
from gradverify.checks.shared.overrides import defines_jvp, defines_vmap
from gradverify.checks.shared.own_precision import needs_float64
from gradverify.checks.shared.real_case import realify
from gradverify.inputs import differentiable_indices, fresh_copies
from gradverify.numerics.jacobian import forward_selection
from gradverify.numerics.salts import Salt
from gradverify.results import Result, Status
from gradverify.target.loaded import Target
from gradverify.usercode import UserCodeError, first_line

CLASSIC = (
    "a classic-style Function (forward takes ctx): torch.func cannot transform it. To make "
    "it transformable, drop ctx from forward, save what backward needs in a "
    "`setup_context(ctx, inputs, output)` staticmethod, and set `generate_vmap_rule = True` "
    "(or write a vmap staticmethod) so that torch.vmap and jacfwd work too"
)
NOT_A_FUNCTION = (
    "not a torch.autograd.Function: torch.func differentiates a plain function with torch's "
    "own derivative formulas, which finite_difference checks; point gradverify at the "
    "Function it calls to check that Function's transforms"
)
CUSTOM_OP = (
    "a torch.library custom op: torch.func does not transform the autograd a custom op "
    f"registers in torch {torch.__version__.split('+')[0]} (grad and vjp raise, forward mode "
    "gives zero tangents); `opcheck` and `compile` check custom ops"
)
NOT_COMPARED = {
    "surrogate": "gradient: surrogate: backward is intentionally not the derivative",
    "approximate": "gradient: approximate: backward is an estimate, not compared entry by entry",
}
RANDOM = "forward draws random numbers, which torch.vmap refuses by default"


def not_transformable(target: Target) -> str | None:
    """Why torch.func cannot transform the target (None: it can)."""
    if target.op_name is not None:
        return CUSTOM_OP
    if not target.is_function:
        return NOT_A_FUNCTION
    if target.obj.setup_context is torch.autograd.Function.setup_context:
        return CLASSIC
    return None


def planned(target: Target, randomized: bool, mode_reason: str) -> tuple[list[str], list[str]]:
    """(the transforms to run, notes on the ones that do not apply)."""
    names = [GRAD, VJP]
    notes = []
    if randomized:
        notes.append(
            f"{JACREV} and {JACFWD} not run: {mode_reason.removeprefix('mode: ')}; grad and vjp "
            "compared along a random direction u (wᵀJu) instead"
        )
        return names, notes
    names.append(JACREV)
    if not defines_jvp(target):
        notes.append(f"{JACFWD} not run: the Function defines no jvp staticmethod")
    elif not defines_vmap(target):
        notes.append(
            f"{JACFWD} not run: it needs a vmap rule too (generate_vmap_rule = True or a "
            "vmap staticmethod)"
        )
    else:
        names.append(JACFWD)
    return names, notes


class FuncCheck:
    """torch.func.grad, vjp, jacrev and jacfwd against central differences, in float64."""

    id: ClassVar[str] = "func"

    def run(self, context: CaseContext) -> list[Result]:
        reason = not_transformable(context.target) or NOT_COMPARED.get(context.spec.gradient)
        if reason is not None:
            return [context.result(self.id, Status.SKIP, reason, applies=False)]
        wrt = differentiable_indices(context.arguments)
        if not wrt:
            return [context.result(self.id, Status.SKIP, "no argument requires grad")]
        kernel = needs_float64(context, self.id)  # compared with float64 differences
        if kernel is not None:
            return [kernel]
        arguments = fresh_copies(context.arguments, torch.float64)
        notes = promotion_notes(context, context.arguments)
        mode, mode_reason = resolve_mode(context, arguments)
        # Complex values as (real, imaginary) pairs, as finite_difference sees them: the
        # transforms then differentiate a real function, through the Function's backward.
        real = realify(context, arguments, wrt)
        context, arguments = real.context, real.arguments
        try:
            with torch.enable_grad():
                selection = forward_selection(context.target.call, arguments)
        except UserCodeError as error:
            return [crash_result(context, self.id, error)]
        if selection is None:
            return [context.result(self.id, Status.SKIP, "no output is differentiable")]
        names, skipped = planned(context.target, mode == "randomized", mode_reason)
        transforms = transforms_for(
            context.target.call, arguments, wrt, selection.layout, selection.outputs,
            context.generator(Salt.FUNC_TRANSFORMS),
        )  # fmt: skip
        judge = Judge(context, arguments, selection, transforms, mode == "randomized", real.parts)
        results, ran = self._run_all(context, judge, names, notes)  # quiet: no not-run notes
        if results:
            return results
        summary = ", ".join(name.removeprefix("torch.func.") for name in ran)
        arguments_words = ", ".join(context.describe_argument(index) for index in wrt)
        return [
            context.result(
                self.id,
                Status.PASS,
                f"torch.func {summary} agree with finite differences for {arguments_words}",
                notes=(*notes, *skipped, *judge.notes),
            )
        ]

    def _run_all(
        self, context: CaseContext, judge: Judge, names: list[str], notes: tuple[str, ...]
    ) -> tuple[list[Result], list[str]]:
        """Each transform in turn: (failures, the transforms that ran to a comparison)."""
        runners: dict[str, Callable[[], dict[int, torch.Tensor]]] = {
            GRAD: judge.transforms.run_grad,
            VJP: judge.transforms.run_vjp,
            JACREV: judge.transforms.run_jacrev,
            JACFWD: judge.transforms.run_jacfwd,
        }
        failures: list[Result] = []
        # torch's complaint -> (the transforms that raised it, the first error): one finding
        crashes: dict[str, tuple[list[str], UserCodeError]] = {}
        ran = []
        for name in names:
            try:
                blocks = runners[name]()
            except UserCodeError as error:
                if name == JACFWD and "randomness" in str(error.error):
                    judge.notes.append(f"{JACFWD} not run: {RANDOM}")
                else:
                    crashes.setdefault(first_line(error.error), ([], error))[0].append(name)
                continue
            ran.append(name)
            try:  # the comparison calls forward and backward eagerly
                judge.compare(name, blocks)
            except UserCodeError as error:
                failures.append(crash_result(context, self.id, error))
                break
        crashed = [self._crash(context, raised, error) for raised, error in crashes.values()]
        failures = [*crashed, *failures, *verdicts(context, self.id, judge)]
        return [replace(r, notes=(*notes, *r.notes)) for r in failures], ran

    def _crash(self, context: CaseContext, names: list[str], error: UserCodeError) -> Result:
        """One failure for every transform that raised the same error."""
        result = crash_result(context, self.id, error)
        if not result.failed:  # forward or backward already fails eagerly: said there
            return result
        where = f" at {error.location}" if error.location else ""
        # torch.vmap failing at the same line of the user's code: one root cause, said once
        vmap_failed = bool(where) and any(
            r.check == "vmap" and r.failed and where in r.message for r in context.earlier
        )
        return replace(
            result,
            same_as="vmap" if vmap_failed else None,
            message=f"{joined(names)} {'raised' if len(names) == 1 else 'raise'} "
            f"{type(error.error).__name__}{where}: {first_line(error.error)}",
            hint=crash_hint(names[0], str(error.error)),
        )
