"""Whether a case's inputs fit forward's signature (or an op's schema), checked before the
case runs: a case that does not fit is a mistake in the spec (exit 2, at the case's line),
not a failure of forward."""

from __future__ import annotations

from gradverify.errors import GradverifyError, SpecError, SpecIssue
from gradverify.spec.load import SpecEntry
from gradverify.spec.models import Case
from gradverify.target.loaded import Target


def check_arity(target: Target, entry: SpecEntry, case: Case) -> None:
    """Raise SpecError (GradverifyError without a spec file) when `case` cannot be passed
    to `target` by position: too few for its required parameters, too many without
    `*args`, or a keyword-only parameter without a default."""
    problem = arity_problem(target, len(case.inputs))
    if problem is None:
        return
    message = f"case '{case.name}' {problem}"
    if entry.file is None:
        raise GradverifyError(f"{target.spec}: {message}")
    line = entry.case_lines.get(case.name, entry.line)
    raise SpecError([SpecIssue(str(entry.file), line, None, "", message)])


def arity_problem(target: Target, given: int) -> str | None:
    """What is wrong with passing `given` positional inputs to `target`, if anything."""
    if not target.signature_known:
        return None  # nothing to compare with: forward says so when it runs
    callee = takes_what(target)
    if target.required_keywords:
        names = ", ".join(target.required_keywords)
        return (
            f"cannot fill {callee}'s keyword-only argument(s) without a default ({names}): "
            "a case's inputs are passed by position; give them a default or make them "
            f"positional. {callee} takes {signature_text(target)}"
        )
    required = sum(1 for name in target.parameters if name not in target.defaults)
    most = None if target.variadic is not None else len(target.parameters)
    if required <= given and (most is None or given <= most):
        return None
    if most is None:
        count = f"at least {required}"
    elif required == most:
        count = str(most)
    else:
        count = f"{required} to {most}"
    inputs = "input" if given == 1 else "inputs"
    return f"gives {given} {inputs} but {callee} takes {count}: {signature_text(target)}"


def takes_what(target: Target) -> str:
    """`MatMul.forward`, `the op mylib::cube` or `scaled_add`: what receives the inputs."""
    if target.op_name is not None:
        return f"the op {target.op_name}"
    return f"{target.name}.forward" if target.is_function else target.name


def signature_text(target: Target) -> str:
    """forward's positional parameters as a person writes them: `a, b, alpha=1.0, *rest`."""
    parts = [
        f"{name}={target.defaults[name]!r}" if name in target.defaults else name
        for name in target.parameters
    ]
    if target.variadic is not None:
        parts.append(f"*{target.variadic}")
    if target.required_keywords:
        if target.variadic is None:
            parts.append("*")
        parts.extend(target.required_keywords)
    return ", ".join(parts) or "(no arguments)"
