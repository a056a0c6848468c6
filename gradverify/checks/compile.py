"""`compile`: the target under torch.compile gives eager's outputs and gradients."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from gradverify.checks.shared import dynamo
from gradverify.checks.shared.backward_call import (
    Run,
    autograd_gradients,
    same_random_numbers,
    seeded_grad_outputs,
)
from gradverify.checks.shared.case import CaseContext, crash_result, dtype_name
from gradverify.inputs import differentiable_indices, fresh_copies
from gradverify.memory import is_allocation_failure
from gradverify.numerics.compare import compare
from gradverify.numerics.jacobian import differentiable_outputs, element_words, unravel
from gradverify.numerics.salts import Salt
from gradverify.results import Result, Status
from gradverify.target.loaded import source_of
from gradverify.target.paths import user_path
from gradverify.usercode import UserCodeError, call_forward


class CompileCheck:
    """Outputs and gradients under torch.compile(backend="aot_eager", fullgraph=True) against eager."""

    id: ClassVar[str] = "compile"

    def run(self, context: CaseContext) -> list[Result]:
        missing = dynamo.unavailable()
        if missing is not None:
            return [context.result(self.id, Status.SKIP, missing)]
        try:
            eager = _run(context, context.target.call, fresh_copies(context.arguments), None)
        except UserCodeError as error:
            return [crash_result(context, self.id, error)]
        with dynamo.quiet(), dynamo.fresh_compile(context.target.call) as compiled:
            try:
                traced = _run(context, compiled.run, fresh_copies(context.arguments), eager)
            except Exception as error:  # eager ran: what fails now is the compile
                if is_allocation_failure(error):
                    raise
                return [self._broken(context, error)]
            graphs = compiled.graphs
        if graphs == 0:  # dynamo ran it eagerly after all: nothing was compared
            message = "torch.compile ran it eagerly (dynamo compiled no graph): nothing compared"
            return [context.result(self.id, Status.WARN, message)]
        problems = _differences(context, self.id, eager, traced)
        return problems or [context.result(self.id, Status.PASS, _summary(eager))]

    def _broken(self, context: CaseContext, error: Exception) -> Result:
        """A graph break or an error while tracing: a warning, at the user's line."""
        original = error.error if isinstance(error, UserCodeError) else error
        found = dynamo.explain_break(context.target.call, fresh_copies(context.arguments), original)
        custom_jvp = found.graph_break and "custom jvp" in found.reason.lower()
        file, line = found.file, found.line
        if file is None:  # refused at the call: the Function (or its jvp) is the user's code
            file, line = _definition(context.target.obj, "jvp" if custom_jvp else None)
        where = f" at {file}:{line}" if file else ""
        said = found.explanation or found.reason
        if found.graph_break:
            message = f"graph break under torch.compile{where}: {said}"
        else:
            message = f"torch.compile cannot trace it{where}: {said}"
        if custom_jvp:
            # dynamo's own advice (remove jvp) would cost forward-mode AD and jacfwd
            hint = (
                "a limitation of torch.compile, not a bug: dynamo runs a Function that "
                "defines `jvp` uncompiled, between compiled graphs. Keep `jvp` for "
                "forward-mode AD and torch.func.jacfwd; without it the Function compiles whole"
            )
        else:
            hint = (
                "the code still runs under torch.compile, but in pieces (or uncompiled) and "
                "slower, and fullgraph=True and torch.export refuse it"
                if found.graph_break
                else "eager runs it, torch.compile raises; torch.export and fullgraph=True fail too"
            )
            hint = f"{hint}; torch: {found.hint}" if found.hint else hint
        return context.result(
            self.id,
            Status.WARN,
            message,
            hint=hint,
            notes=(f"dynamo: {found.reason}",) if found.explanation else (),
            source_file=file,
            source_line=line,
            same_as=None if found.graph_break else _traced_by_opcheck(context),
        )


def _definition(obj: Any, method: str | None) -> tuple[str | None, int | None]:
    """Where `obj` (or its `method`, when it has one) is defined, as reports show paths."""
    found = getattr(obj, method, None) if method is not None else None
    file, line = source_of(inspect.unwrap(found if found is not None else obj))
    return (user_path(file), line) if file is not None else (None, None)


def _traced_by_opcheck(context: CaseContext) -> str | None:
    """`opcheck`, when it already failed on this case: its fake-tensor and AOT tests trace
    the op as torch.compile does, so an error while tracing is most likely the same one."""
    failed = any(r.check == "opcheck" and r.failed for r in context.earlier)
    return "opcheck" if failed else None


def _run(context: CaseContext, call: Any, arguments: tuple[Any, ...], eager: Run | None) -> Run:
    """Outputs, then gradients for the seeded grad_outputs of the backward check.

    `eager` given: the compiled run, which differentiates the outputs eager found
    differentiable, so that both runs take the same grad_outputs.
    """
    # Both runs draw the same random numbers: a dropout-like Function is equal to itself.
    with same_random_numbers(context.seed):
        outputs = call_forward(call, arguments)
        wrt = differentiable_indices(arguments)
        reference = eager.outputs if eager is not None else outputs
        selected = [index for index, _ in differentiable_outputs(reference)]
        if not (wrt and selected):
            return Run(arguments, outputs, gradients=dict.fromkeys(wrt))
        salt = Salt.BACKWARD_GRAD_OUTPUTS  # the backward check's grad_outputs
        grad_outputs = seeded_grad_outputs(reference, context.generator(salt))
        pairs = [(outputs[i], grad_outputs[i]) for i in selected]
        gradients = autograd_gradients(pairs, arguments, wrt)
        return Run(arguments, outputs, tuple(grad_outputs), gradients)


def _differences(context: CaseContext, check: str, eager: Run, traced: Run) -> list[Result]:
    problems = []
    if len(traced.outputs) != len(eager.outputs):
        message = (
            f"under torch.compile forward returns {len(traced.outputs)} output(s), "
            f"eagerly {len(eager.outputs)}"
        )
        return [context.result(check, Status.FAIL, message)]
    for index, (compiled, reference) in enumerate(zip(traced.outputs, eager.outputs, strict=True)):
        problem = _differs(compiled, reference, context)
        if problem is not None:
            problems.append(
                _finding(context, check, problem, f"output {index}", output_index=index)
            )
    for index in sorted(eager.gradients.keys() | traced.gradients.keys()):
        compiled, reference = traced.gradients.get(index), eager.gradients.get(index)
        if compiled is None and reference is None:
            continue
        compiled_value = _or_zeros(compiled, reference)
        reference_value = _or_zeros(reference, compiled)
        problem = _differs(compiled_value, reference_value, context)
        if problem is not None:
            what = f"the gradient of {context.describe_argument(index)}"
            problems.append(_finding(context, check, problem, what, input_index=index))
    return problems


@dataclass(frozen=True)
class Difference:
    """Where a compiled value is not eager's: a structural difference, or the worst element."""

    structure: str | None = None  # "has shape [3], eagerly [3, 1]"
    element: tuple[int, ...] | None = None
    compiled: float | None = None
    eager: float | None = None
    mismatched: int = 0
    total: int = 0
    max_abs_error: float | None = None


def _differs(compiled: Any, eager: Any, context: CaseContext) -> Difference | None:
    if not isinstance(eager, torch.Tensor) or not isinstance(compiled, torch.Tensor):
        if isinstance(eager, torch.Tensor) or isinstance(compiled, torch.Tensor):
            return Difference(
                structure=f"is a {type(compiled).__name__}, eagerly a {type(eager).__name__}"
            )
        return (
            None
            if _same_literal(compiled, eager)
            else Difference(structure=f"is {compiled!r}, eagerly {eager!r}")
        )
    if compiled.shape != eager.shape:
        return Difference(
            structure=f"has shape {list(compiled.shape)}, eagerly {list(eager.shape)}"
        )
    if compiled.dtype != eager.dtype:
        return Difference(
            structure=f"is {dtype_name(compiled.dtype)}, eagerly {dtype_name(eager.dtype)}"
        )
    if not (compiled.is_floating_point() or compiled.is_complex()):
        compiled, eager = compiled.to(torch.float64), eager.to(torch.float64)
    tolerance = context.tolerance
    # A traced graph may round differently (decomposed or reordered ops): a few units in the
    # last place of a float16 or bfloat16 value are not a finding.
    rounding = 4 * torch.finfo(eager.dtype).eps if eager.is_floating_point() else 0.0
    found = compare(
        compiled.detach().reshape(1, -1),
        eager.detach().reshape(1, -1),
        tolerance.atol + tolerance.nondet_tol,  # atomics may reorder sums, compiled or not
        max(tolerance.rtol, rounding),
    )
    if found.ok:
        return None
    return Difference(
        element=unravel(found.column, eager.shape),
        compiled=found.analytical,
        eager=found.numerical,
        mismatched=found.mismatched,
        total=found.total,
        max_abs_error=found.max_abs_error,
    )


def _finding(
    context: CaseContext, check: str, problem: Difference, what: str, **where: Any
) -> Result:
    if problem.structure is not None:
        return context.result(
            check, Status.FAIL, f"under torch.compile {what} {problem.structure}", **where
        )
    assert problem.element is not None
    message = (
        f"under torch.compile {what} differs from eager at {element_words(problem.element)}: "
        f"compiled {problem.compiled:.6g}, eager {problem.eager:.6g}"
        f" ({problem.mismatched} of {problem.total} element(s) differ)"
    )
    return context.result(
        check,
        Status.FAIL,
        message,
        element=problem.element,
        analytical=problem.compiled,
        numerical=problem.eager,
        value_labels=("compiled", "eager"),
        max_abs_error=problem.max_abs_error,
        mismatched=problem.mismatched,
        total=problem.total,
        hint="code that behaves differently when traced: Python-side state, data-dependent "
        "branches or values read once at trace time (a global, an attribute, .item())",
        **where,
    )


def _or_zeros(gradient: torch.Tensor | None, other: torch.Tensor | None) -> Any:
    """A missing gradient is a zero one, as autograd treats it."""
    if gradient is None and isinstance(other, torch.Tensor):
        return torch.zeros_like(other)
    return gradient


def _same_literal(compiled: Any, eager: Any) -> bool:
    try:
        return bool(compiled == eager)
    except Exception:  # values that cannot be compared are not judged
        return True


def _summary(eager: Run) -> str:
    gradients = sum(1 for g in eager.gradients if g is not None)
    return (
        f"{len(eager.outputs)} output(s) and {gradients} gradient(s) equal eager's, "
        f"compiled whole ({dynamo.BACKEND}, fullgraph)"
    )
