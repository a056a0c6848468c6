"""`backward`: what backward itself returns is well-formed, finite, deterministic and side-effect free."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

import torch

from gradverify.checks.backward.malformed import malformed
from gradverify.checks.backward.nondeterminism import rounding_words
from gradverify.checks.backward.unreduced import summed_by_autograd, unreduced_warning
from gradverify.checks.shared.backward_call import Gradients, run_backward, seeded_grad_outputs
from gradverify.checks.shared.case import (
    CaseContext,
    crash_result,
    no_gradient_to_check,
)
from gradverify.inputs import fresh_copies
from gradverify.numerics.compare import wide_dtype
from gradverify.numerics.jacobian import differentiable_outputs, unravel
from gradverify.numerics.salts import Salt
from gradverify.numerics.spreads import Spread, spreads
from gradverify.numerics.stochastic import run_to_run_spread
from gradverify.results import Result, Status
from gradverify.usercode import UserCodeError, call_forward, user_code


class BackwardCheck:
    """Backward's raw return: count, shape, dtype, device, finiteness, determinism, no in-place grad_output."""

    id: ClassVar[str] = "backward"

    def run(self, context: CaseContext) -> list[Result]:
        arguments = fresh_copies(context.arguments)
        if not any(isinstance(a, torch.Tensor) and a.requires_grad for a in arguments):
            return [context.result(self.id, Status.SKIP, "no argument requires grad")]
        try:
            outputs = call_forward(context.target.call, arguments)
        except UserCodeError as error:
            return [crash_result(context, self.id, error)]
        nothing = no_gradient_to_check(context, self.id)
        if nothing is not None:
            return [nothing]
        if not differentiable_outputs(outputs):
            return [context.result(self.id, Status.SKIP, "no output is differentiable")]
        grad_outputs = seeded_grad_outputs(outputs, context.generator(Salt.BACKWARD_GRAD_OUTPUTS))
        snapshots = [(g.clone(), g._version) if g is not None else None for g in grad_outputs]
        try:
            first = run_backward(context, outputs, arguments, grad_outputs)
        except UserCodeError as error:
            invalid = _invalid_registered_gradient(context, self.id, error, arguments)
            return [invalid or crash_result(context, self.id, error)]

        problems = _modified_grad_outputs(context, self.id, grad_outputs, snapshots)
        count_problem = _count_problem(context, self.id, first, arguments)
        if count_problem is not None:
            return [*problems, count_problem]
        shaped = malformed(context, self.id, first, arguments, outputs)
        problems += [result for result in shaped if result.failed]
        by_design = [result for result in shaped if not result.failed]  # forward's own dtype
        if problems:
            return problems
        try:
            again = run_backward(
                context, outputs, arguments, [s[0].clone() if s else None for s in snapshots]
            )
        except UserCodeError as error:
            return [crash_result(context, self.id, error)]
        spread, rounding = None, None
        if context.spec.gradient == "approximate":
            spread = run_to_run_spread(first, again)  # a stochastic estimator's, as declared
        else:
            elements = sum(output.numel() for _, output in differentiable_outputs(outputs))
            found = [
                spread
                for spread in spreads(first, again, elements)
                if spread.worst > context.tolerance.nondet_tol
            ]
            problems += [
                _nondeterministic(context, self.id, s, first, again)
                for s in found
                if not s.rounding
            ]
            if found and not problems:  # atomics: allowed from here on, and said
                context.memo.nondeterminism = max(s.allowance for s in found)
                rounding = rounding_words(found)
        if problems:
            return problems
        if context.spec.gradient == "exact":
            try:
                scaled = run_backward(
                    context,
                    outputs,
                    arguments,
                    [s[0].clone() * LINEARITY_SCALE if s else None for s in snapshots],
                )
            except UserCodeError as error:
                return [crash_result(context, self.id, error)]
            problems += _nonlinear(context, self.id, first, scaled)
            if problems:
                return problems
        crash = _partial_use_crash(context, self.id, outputs, arguments, snapshots)
        if crash is not None:
            return [crash]
        warnings = [
            unreduced_warning(context, self.id, index, grad, outputs, grad_outputs)
            for index, (argument, grad) in enumerate(zip(arguments, first, strict=False))
            if isinstance(grad, torch.Tensor) and isinstance(argument, torch.Tensor)
            and argument.requires_grad and summed_by_autograd(grad, argument)
        ]  # fmt: skip
        warnings += by_design
        return warnings or [
            context.result(self.id, Status.PASS, _summary(first, arguments, spread, rounding))
        ]


# What torch's autograd engine (validate_outputs) raises for an op's registered backward that
# returns a gradient not fit for its argument: "Function GeneratedBackwardFor_ns_op_default-
# Backward returned an invalid gradient at index 0 - got [] but expected shape compatible with
# [4]", or "- expected dtype|layout|device X but got Y". The index counts tensor arguments.
_INVALID_GRADIENT = re.compile(
    r"returned an invalid gradient at index (?P<index>\d+) - "
    r"(?:got (?P<got_shape>\[[^\]]*\]) but expected shape compatible with "
    r"(?P<expected_shape>\[[^\]]*\])"
    r"|expected (?P<kind>d?type|layout|device) (?P<expected>.+?) but got (?P<got>.+?)$)",
    re.MULTILINE,
)


def _invalid_registered_gradient(
    context: CaseContext, check: str, error: UserCodeError, arguments: Sequence[Any]
) -> Result | None:
    """A custom op's registered backward returned a gradient of the wrong shape, dtype, layout
    or device, as torch reports it: said in our words, torch's text kept in the details."""
    match = _INVALID_GRADIENT.search(str(error.error))
    if context.target.op_name is None or match is None:
        return None
    tensors = [i for i, argument in enumerate(arguments) if isinstance(argument, torch.Tensor)]
    position = int(match["index"])
    index = tensors[position] if position < len(tensors) else None
    which = context.describe_argument(index) if index is not None else f"tensor {position}"
    if match["got_shape"] is not None:
        what = f"of shape {match['got_shape']}"
        expected = match["expected_shape"]
    else:
        kind = "dtype" if match["kind"] == "type" else match["kind"]
        what = f"with {kind} {match['got']}"
        expected = match["expected"]
    return context.result(
        check,
        Status.FAIL,
        f"the registered backward returns a gradient {what} for {which}, expected {expected}",
        input_index=index,
        hint="register_autograd's backward returns one gradient per argument, each in its "
        "argument's shape, dtype and device (None where there is none)",
        details=error.frames,  # torch's words last
        source_file=context.target.source_file,
        source_line=context.target.backward_line,
    )


def _partial_use_crash(
    context: CaseContext,
    check: str,
    outputs: Sequence[Any],
    arguments: Sequence[Any],
    snapshots: Sequence[Any],
) -> Result | None:
    """A Function with several differentiable outputs, used one output at a time.

    Autograd then passes zeros for the unused outputs' grad_outputs, or None when the Function
    called ctx.set_materialize_grads(False); a backward that assumes a tensor crashes.
    """
    selected = differentiable_outputs(outputs)
    if not context.target.is_function or len(selected) < 2:
        return None
    wrt = [a for a in arguments if isinstance(a, torch.Tensor) and a.requires_grad]
    for index, output in selected:
        grad_output = snapshots[index][0].clone()
        try:
            with user_code("backward"):
                torch.autograd.grad(
                    [output], wrt, [grad_output], retain_graph=True, allow_unused=True
                )
        except UserCodeError as error:
            return context.result(
                check,
                Status.FAIL,
                f"backward crashes when only output {index} is used (the other grad_outputs are "
                f"undefined/None): {error}",
                output_index=index,
                hint="treat a None grad_output as zeros, or keep ctx.set_materialize_grads(True)",
                details=error.frames,
            )
    return None


def _count_problem(
    context: CaseContext, check: str, grads: Gradients, arguments: Sequence[Any]
) -> Result | None:
    expected = len(arguments)
    names = ", ".join(filter(None, (context.target.argument_name(i) for i in range(expected))))
    if len(grads) < expected:
        return context.result(
            check,
            Status.FAIL,
            f"backward returned {len(grads)} value(s), but forward takes {expected} argument(s) ({names})",
            hint="return one gradient per forward argument, in order, with None for arguments that "
            "have no gradient (literals, integer tensors)",
        )
    extra = [i for i in range(expected, len(grads)) if grads[i] is not None]
    if extra:
        return context.result(
            check,
            Status.FAIL,
            f"backward returned {len(grads)} values, but forward takes {expected} argument(s) ({names}); "
            f"value {extra[0]} is not None",
            hint="extra trailing values must be None",
        )
    return None


def _modified_grad_outputs(
    context: CaseContext, check: str, grad_outputs: Sequence[Any], snapshots: Sequence[Any]
) -> list[Result]:
    problems = []
    for index, (grad, snapshot) in enumerate(zip(grad_outputs, snapshots, strict=True)):
        if snapshot is None:
            continue
        original, version = snapshot
        if grad._version != version or not torch.equal(grad, original):
            problems.append(
                context.result(
                    check,
                    Status.FAIL,
                    f"backward modified grad_output {index} in place",
                    output_index=index,
                    hint="grad_output may be shared with other parts of the graph; compute a new tensor "
                    "(grad_output * 2, not grad_output.mul_(2))",
                )
            )
    return problems


# grad_output's scale for the linearity run: negative (an abs or a sign shows) and a power of
# two (scaling by it is exact, so a linear backward gives the same values to the last bit),
# larger than 1 (a smaller one sends float16 gradients into subnormals, which round).
LINEARITY_SCALE = -2.0


def _nonlinear(
    context: CaseContext, check: str, first: Gradients, scaled: Gradients
) -> list[Result]:
    """A vector-Jacobian product scales with the vector: backward(s·v) = s·backward(v). One
    that squares grad_output, takes its abs or clips it agrees with finite differences
    wherever grad_output is one-hot with a 1, as gradcheck's are, and is wrong for any other."""
    for index, (one, two) in enumerate(zip(first, scaled, strict=False)):
        if not isinstance(one, torch.Tensor) or not isinstance(two, torch.Tensor):
            continue
        if one.shape != two.shape or one.is_complex() != two.is_complex():
            continue
        expected = one.detach().to(wide_dtype(one)) * LINEARITY_SCALE
        got = two.detach().to(wide_dtype(two))
        tolerance = context.tolerance
        # each run may carry the nondeterminism the spec admits
        allowed = (tolerance.atol + tolerance.rtol * expected.abs()) + tolerance.nondet_tol * (
            1 + abs(LINEARITY_SCALE)
        )
        off = (got - expected).abs() > allowed
        if not bool(off.any()):
            continue
        flat = int(torch.argmax(((got - expected).abs() - allowed).reshape(-1)).item())
        element = unravel(flat, one.shape)
        return [
            context.result(
                check,
                Status.FAIL,
                f"backward is not linear in grad_output: with grad_output times -2, the "
                f"gradient of {context.describe_argument(index)} at element {list(element)} is "
                f"{_item(got, flat):.6g}, not -2 times {_item(one, flat):.6g} "
                f"({int(off.sum())} of {off.numel()} entries)",
                input_index=index,
                element=element,
                analytical=_item(got, flat),
                numerical=_item(expected, flat),
                value_labels=("returned", "linear would be"),
                hint="a gradient scales with grad_output, as every derivative does: likely "
                "grad_output squared, its abs or sign, or a clip of it in backward (gradcheck's "
                "one-hot grad_outputs of 1 hide it); if that is on purpose (gradient clipping), "
                "declare `gradient: surrogate`",
            )
        ]
    return []


def _item(tensor: torch.Tensor, flat: int) -> Any:
    value = tensor.detach().reshape(-1)[flat].item()
    return value.real if isinstance(value, complex) else value


def _nondeterministic(
    context: CaseContext, check: str, spread: Spread, first: Gradients, again: Gradients
) -> Result:
    """Two runs apart by more than rounding explains: random numbers, or a lost write."""
    one, two, worst, flat = first[spread.index], again[spread.index], spread.worst, spread.flat
    return context.result(
        check,
        Status.FAIL,
        f"backward is nondeterministic: two runs on the same inputs differ by {worst:.3g} "
        f"in the gradient of {context.describe_argument(spread.index)}, more than rounding "
        f"explains ({spread.allowance:.2g})",
        input_index=spread.index,
        element=unravel(flat, one.shape),
        analytical=_item(one, flat),
        numerical=_item(two, flat),
        value_labels=("first run", "second run"),
        max_abs_error=worst,
        hint="random numbers in backward, or a race that loses writes (a gradient assigned at "
        "repeated indices instead of accumulated: index_add_, index_put_(accumulate=True)); "
        f"if the spread is intended, set `tolerance: {{nondet_tol: {worst:.2g}}}`, or declare a "
        "stochastic estimator with `gradient: approximate` and `samples:`",
    )


def _summary(
    grads: Gradients,
    arguments: Sequence[Any],
    spread: float | None = None,
    rounding: str | None = None,
) -> str:
    returned = sum(1 for g in grads[: len(arguments)] if g is not None)
    counted = f"{returned} gradient(s) for {len(arguments)} argument(s)"
    if spread:  # gradient: approximate, and the runs differ
        return f"{counted}, well-formed; two runs differ by up to {spread:.3g} (stochastic)"
    if rounding:  # atomics
        return f"{counted}, well-formed; {rounding}"
    return f"{counted}, well-formed and deterministic"
