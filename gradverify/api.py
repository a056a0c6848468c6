"""The Python API: verify a Function already in hand, from inside any test.

Importing this module stays cheap; torch and the engine are imported when a check runs.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from gradverify.errors import SpecError, SpecIssue
from gradverify.results import Report, Result, Status, finding_key
from gradverify.spec.load import SpecEntry, format_key_path
from gradverify.spec.messages import plain_message
from gradverify.spec.models import INPUT_TAGS, FunctionSpec, Tolerance

CASE_NAME = "verify"
_WHERE = "gradverify.verify()"


class GradverifyWarning(UserWarning):
    """A check that warned (e.g. a kink at an explicit input): worth reading, not a failure."""


def verify(
    fn: Callable[..., Any],
    inputs: Sequence[Any],
    *,
    checks: Sequence[str] | None = None,
    tolerance: Tolerance | Mapping[str, float] | None = None,
    gradient: str = "exact",
    seed: int = 0,
    name: str | None = None,
    **spec: Any,
) -> Report:
    """Run the checks on `fn` (a Function class or any callable) with `inputs`; the Report.

    `inputs` are forward's positional arguments, as a spec case's `inputs`: tensors are
    passed as given, mappings such as `{"shape": [3]}` are drawn from `seed`, anything else
    is a literal. Further keyword arguments are spec keys (`kinks`, `max_error`, `mode`,
    `reference`, ...). Raises SpecError for arguments a spec would reject.
    """
    if isinstance(fn, str):
        raise TypeError(
            "verify() takes the Function itself, not an import path; "
            "for 'module:Attr' use `gradverify check`"
        )
    from gradverify.engine.case import Job, run_case
    from gradverify.target.loading import target_of

    function_spec = _spec(inputs, checks, tolerance, gradient, seed, spec)
    target = target_of(fn, name)
    job = Job(SpecEntry(function_spec, file=None), target)
    results, notes = run_case(job, function_spec.cases[0], function_spec.seed)
    return Report(results=tuple(results), notes=notes)


def assert_gradients(fn: Callable[..., Any], inputs: Sequence[Any], **options: Any) -> Report:
    """`verify`, then AssertionError with the report's explanation if any check failed.

    Warnings become GradverifyWarning (so `-W error` or `filterwarnings` can make them fail).
    """
    report = verify(fn, inputs, **options)
    warn_about(report.results)
    failed = [result for result in report.results if result.failed]
    if failed:
        raise AssertionError(failures_explained(failed))
    return report


def warn_about(results: Sequence[Result], stacklevel: int = 3) -> None:
    """A GradverifyWarning for each `warn` result."""
    for result in results:
        if result.status is Status.WARN:
            subject = f" ({result.input_name})" if result.input_name else ""
            warnings.warn(
                GradverifyWarning(
                    f"{result.target} [{result.case}] {result.check}{subject}: {result.message}"
                ),
                stacklevel=stacklevel,
            )


def failures_explained(results: Sequence[Result], width: int = 100, color: bool = False) -> str:
    """The CLI's panel for each result (message, argument, element, analytical and numerical
    values, likely cause), under the case's name and spec location."""
    from rich.console import Console
    from rich.text import Text

    from gradverify.report.text import failure_panel  # the CLI's own, reused as it is

    buffer = io.StringIO()
    console = Console(
        file=buffer, width=width, force_terminal=color, no_color=not color,
        color_system="standard" if color else None, highlight=False, emoji=False,
    )  # fmt: skip
    cases: set[tuple[str, str]] = set()
    findings: set[tuple[object, ...]] = set()
    said: set[tuple[str, str, str]] = set()  # (target, case, check) whose panel was printed
    for result in results:
        if (result.target, result.case) not in cases:
            cases.add((result.target, result.case))
            console.print(Text(_heading(result), style="bold"))
        if result.same_as is not None and (result.target, result.case, result.same_as) in said:
            # One root cause, one finding (gradverify.engine.folding), as the CLI says it.
            console.print(
                Text(f"  {result.check}: the same finding as {result.same_as}", style="dim")
            )
            continue
        said.add((result.target, result.case, result.check))
        finding = finding_key(result)
        if finding is not None and finding in findings:
            # gradcheck often confirms what finite_difference found: say it once, as the CLI does
            console.print(Text(f"  {result.check}: the same finding as above", style="dim"))
            continue
        if finding is not None:
            findings.add(finding)
        console.print(failure_panel(result))
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines())


def _heading(result: Result) -> str:
    where = ""
    if result.spec_file is not None:
        where = f"  {result.spec_file}" + (f":{result.spec_line}" if result.spec_line else "")
    return f"{result.target}  case {result.case}{where}"


def _spec(
    inputs: Sequence[Any],
    checks: Sequence[str] | None,
    tolerance: Tolerance | Mapping[str, float] | None,
    gradient: str,
    seed: int,
    extra: Mapping[str, Any],
) -> FunctionSpec:
    if isinstance(inputs, str | bytes) or not isinstance(inputs, Sequence):
        raise TypeError("inputs must be a list of forward's positional arguments")
    data: dict[str, Any] = {"gradient": gradient, "seed": seed, **extra}
    if checks is not None:
        data["checks"] = list(checks)
    if tolerance is not None:
        data["tolerance"] = tolerance
    try:
        case = {"name": CASE_NAME, "inputs": list(inputs)}
        return FunctionSpec.model_validate({**data, "cases": [case]})
    except ValidationError as error:
        raise SpecError([_issue(item) for item in error.errors()]) from None


def _issue(error: Any) -> SpecIssue:
    # Drop the one case and the union tags from locations: cases.0.inputs.0.tensor.shape
    # is inputs[0].shape to the caller.
    location = error["loc"][2:] if error["loc"][:2] == ("cases", 0) else error["loc"]
    path = tuple(part for part in location if part not in INPUT_TAGS)
    if error["type"] == "extra_forbidden":
        message = f"unknown key {path[-1]!r}"
    else:
        message = plain_message(error, path)
    return SpecIssue(_WHERE, None, None, format_key_path(path), message)
