"""`forward`: forward runs, outputs are sane, and the caller's inputs are left alone."""

from __future__ import annotations

from typing import Any, ClassVar

import torch

from gradverify.checks.shared.case import (
    RETURNS_NOTHING,
    CaseContext,
    crash_result,
    op_returns_nothing,
)
from gradverify.inputs import fresh_copies
from gradverify.numerics.jacobian import differentiable_outputs, unravel
from gradverify.results import Result, Status
from gradverify.usercode import UserCodeError, call_forward


class ForwardCheck:
    """forward runs; outputs are finite for finite inputs; inputs are not modified in place."""

    id: ClassVar[str] = "forward"

    def run(self, context: CaseContext) -> list[Result]:
        arguments = fresh_copies(context.arguments)
        before = [
            (a.detach().clone(), a._version) if isinstance(a, torch.Tensor) else None
            for a in arguments
        ]
        try:
            outputs = call_forward(context.target.call, arguments)
        except UserCodeError as error:
            return [crash_result(context, self.id, error)]
        returns_nothing = op_returns_nothing(context)
        problems = [] if returns_nothing else self._bad_outputs(context, outputs, arguments)
        problems += self._modified_inputs(context, arguments, before)
        if problems:
            return problems
        summary = RETURNS_NOTHING if returns_nothing else _summary(outputs)
        return [context.result(self.id, Status.PASS, summary, notes=_dirty_notes(context))]

    def _bad_outputs(
        self, context: CaseContext, outputs: tuple[Any, ...], arguments: tuple[Any, ...]
    ) -> list[Result]:
        problems: list[Result] = []
        tensors = [o for o in outputs if isinstance(o, torch.Tensor)]
        if not tensors:
            kinds = ", ".join(type(o).__name__ for o in outputs)
            return [
                context.result(self.id, Status.FAIL, f"forward returned no tensor (got {kinds})")
            ]
        wants_grad = any(isinstance(a, torch.Tensor) and a.requires_grad for a in arguments)
        if wants_grad and not differentiable_outputs(outputs):
            problems.append(
                context.result(
                    self.id,
                    Status.WARN,
                    "no output is differentiable (all are non-floating or marked non-differentiable), "
                    "so no gradient can flow back through this Function",
                )
            )
        inputs_finite = all(
            bool(torch.isfinite(a).all())
            for a in arguments
            if isinstance(a, torch.Tensor) and (a.is_floating_point() or a.is_complex())
        )
        if not inputs_finite:
            return problems
        for index, output in enumerate(outputs):
            if not isinstance(output, torch.Tensor) or not (
                output.is_floating_point() or output.is_complex()
            ):
                continue
            bad = ~torch.isfinite(output.detach())
            if bad.any():
                flat = int(bad.reshape(-1).nonzero()[0].item())
                element = unravel(flat, output.shape)
                value = output.detach().reshape(-1)[flat].item()
                problems.append(
                    context.result(
                        self.id,
                        Status.FAIL,
                        f"output {index} has {int(bad.sum())} non-finite element(s) for finite inputs; "
                        f"first at {list(element)}: {value}",
                        output_index=index,
                        element=element,
                        hint="likely an overflow or a division by zero: compute in a numerically stable form",
                    )
                )
        return problems

    def _modified_inputs(
        self,
        context: CaseContext,
        arguments: tuple[Any, ...],
        before: list[tuple[torch.Tensor, int] | None],
    ) -> list[Result]:
        problems: list[Result] = []
        for index, (argument, snapshot) in enumerate(zip(arguments, before, strict=True)):
            if snapshot is None:
                continue
            original, version = snapshot
            current = argument.detach()
            changed = ~((current == original) | (torch.isnan(current) & torch.isnan(original)))
            if not changed.any() and argument._version == version:
                continue
            describe = context.describe_argument(index)
            if changed.any():
                flat = int(changed.reshape(-1).nonzero()[0].item())
                element = unravel(flat, argument.shape)
                was, now = original.reshape(-1)[flat].item(), current.reshape(-1)[flat].item()
                detail = f"element {list(element)} changed from {was:.6g} to {now:.6g}"
            else:
                element, detail = None, "its version counter changed (an in-place op ran on it)"
            problems.append(
                context.result(
                    self.id,
                    Status.FAIL,
                    f"forward modified {describe} in place: {detail}",
                    input_index=index,
                    element=element,
                    hint="the caller's tensor is changed behind its back; work on a copy (x = x.clone()) "
                    "or use an out-of-place op",
                )
            )
        return problems


def _dirty_notes(context: CaseContext) -> tuple[str, ...]:
    """Arguments forward writes into with ctx.mark_dirty (an op: declares in mutates_args):
    every check passes them as clones."""
    dirty = context.target.dirty
    if context.target.op_name is not None:
        said = "(declared in the op's mutates_args): every check passes it as a clone"
    else:
        said = (
            "(ctx.mark_dirty): every check passes it as a clone of a leaf that requires grad, "
            "and checks the leaf's gradient"
        )
    return tuple(
        f"{context.describe_argument(index)} is written in place {said}"
        for index, argument in enumerate(context.arguments)
        if isinstance(argument, torch.Tensor) and dirty.marks(index)
    )


def _summary(outputs: tuple[Any, ...]) -> str:
    shapes = ", ".join(
        f"{list(o.shape)} {str(o.dtype).removeprefix('torch.')}"
        if isinstance(o, torch.Tensor)
        else type(o).__name__
        for o in outputs
    )
    return f"{len(outputs)} output(s): {shapes}"
