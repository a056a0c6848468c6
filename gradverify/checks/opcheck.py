"""`opcheck`: torch.library.opcheck's tests of a custom op's registrations, on the case's
inputs, each failing test said in plain words, with where to look.

torch.library.opcheck verifies what the op's gradient check cannot see: that its schema
says what it does to its arguments, that its backward is registered where autograd finds
it, that its fake implementation (`register_fake`) returns what the real op returns, and that
AOTAutograd (torch.compile's tracer) runs it and its backward with symbolic shapes. It
imports AOTAutograd on its first call in a process (seconds); later calls take about a tenth
of a second.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import torch

from gradverify.checks.shared.case import CaseContext, crash_result
from gradverify.checks.shared.dynamo import quiet
from gradverify.inputs import fresh_copies
from gradverify.results import Result, Status
from gradverify.stacks import last_user_frame
from gradverify.target.loaded import Target, source_of
from gradverify.usercode import UserCodeError, call_forward, user_code

# torch.library.opcheck's default tests, in the order it runs them, and what each verifies.
TESTS = {
    "test_schema": "the schema says what the op does to its arguments",
    "test_autograd_registration": "the backward is registered where autograd finds it",
    "test_faketensor": "the fake implementation returns what the real op returns",
    "test_aot_dispatch_dynamic": "AOTAutograd traces the op and its backward, shapes dynamic",
}
NOT_AN_OP = (
    "not a custom op: opcheck tests torch.library registrations (a target "
    "`module:ns::name`, `op:ns::name` or a torch.library.custom_op object)"
)
HINTS = {
    "test_schema": "declare every argument the op writes to in `mutates_args`, and return "
    "new tensors, not inputs or views of them",
    "test_autograd_registration": "register the backward with `register_autograd` (or an "
    "autograd kernel at the Autograd key, not at a backend key such as CPU)",
    "test_faketensor": "register_fake must return tensors of the shapes and dtypes the real "
    "op returns: torch.compile traces the op with it",
    "test_aot_dispatch_dynamic": "torch.compile runs the fake implementation and the "
    "backward on fake tensors with symbolic shapes: no .item(), .tolist() or shapes that "
    "depend on values",
}
NO_FAKE_HINT = (
    "add a fake implementation with {register}, returning empty tensors of the output's "
    "shape and dtype: torch.compile and torch.export trace the op with it"
)
# The test that traces the op with its fake: it fails whenever test_faketensor does.
FAKE, FOLLOWS_FAKE = "test_faketensor", "test_aot_dispatch_dynamic"
NO_AUTOGRAD_HINT = "register the backward with {register}, not as a backend (CPU) kernel"
NO_BACKWARD_FOR_MUTATION = (
    "torch allows no register_autograd on an op that mutates its arguments: make a functional "
    "op (return new tensors) to differentiate it, or check it with inputs that have "
    "`requires_grad: false`"
)
_SHAPES = re.compile(r"Shapes torch\.Size\((\[.*?\])\) and torch\.Size\((\[.*?\])\)")
_DTYPES = re.compile(r"Dtypes torch\.(\w+) and torch\.(\w+)")
_OUTPUT = re.compile(r"for output\[(\d+)\]")
_MUTATED = re.compile(r"Argument (\w+) is not defined as mutable but was mutated")


class OpcheckCheck:
    """torch.library.opcheck's tests, each failure with torch's reason in plain words."""

    id: ClassVar[str] = "opcheck"

    def run(self, context: CaseContext) -> list[Result]:
        if context.target.op_name is None:
            return [context.result(self.id, Status.SKIP, NOT_AN_OP, applies=False)]
        tolerance = context.tolerance
        op: Any = context.target.op  # the OpOverload itself (`call` wraps it)
        try:
            # Every test calls the op: if it raises, forward's failure says so, once.
            call_forward(context.target.call, fresh_copies(context.arguments))
            with user_code("opcheck"), quiet():
                outcomes = torch.library.opcheck(
                    op,
                    fresh_copies(context.arguments),
                    test_utils=list(TESTS),
                    raise_exception=False,
                    rtol=tolerance.rtol,
                    atol=tolerance.atol,
                )
        except UserCodeError as error:
            return [crash_result(context, self.id, error)]
        failures = {test: error for test, error in outcomes.items() if error != "SUCCESS"}
        if not failures:
            return [context.result(self.id, Status.PASS, f"{len(TESTS)} opcheck tests pass")]
        # AOTAutograd traces the op with its fake: a wrong fake fails both tests, one cause.
        followed = failures.pop(FOLLOWS_FAKE, None) if FAKE in failures else None
        results = [self._failure(context, test, error) for test, error in failures.items()]
        if followed is not None:
            fake = next(i for i, test in enumerate(failures) if test == FAKE)
            results[fake] = _with_followup(results[fake], followed, context.target)
        return results

    def _failure(self, context: CaseContext, test: str, error: Any) -> Result:
        reason, hint = explain_failed_test(test, error, context.target)
        source_file, source_line = _where(context, test, error)
        return context.result(
            self.id,
            Status.FAIL,
            f"{test} fails: {reason}",
            hint=hint,
            details=_torch_said(error, reason),
            source_file=source_file,
            source_line=source_line,
            same_as=_said_before(context, error),
        )


def _said_before(context: CaseContext, error: Any) -> str | None:
    """`forward` or `backward`, when it already failed on this case with torch's words (the
    op has no backward, say): the report says it once."""
    first = _first_sentence(_message(error))
    return next(
        (
            r.check
            for r in context.earlier
            if r.failed
            and r.check in ("forward", "backward")
            and first in " ".join((r.message, *r.details))  # torch's words, or ours with theirs
        ),
        None,
    )


def _with_followup(fake: Result, error: Any, target: Target) -> Result:
    """test_faketensor's failure, saying that test_aot_dispatch_dynamic fails after it."""
    reason, _ = explain_failed_test(FOLLOWS_FAKE, error, target)
    raised_at = _user_line(error)
    where = f" (at {Path(raised_at[0]).name}:{raised_at[1]})" if raised_at else ""
    note = (
        f"{FOLLOWS_FAKE} fails too, most likely from the same cause (AOTAutograd traces the "
        f"op with its fake): {reason}{where}"
    )
    said = tuple(f"torch ({FOLLOWS_FAKE}): {_message(error)}" for _ in _torch_said(error, reason))
    return replace(fake, notes=(*fake.notes, note), details=(*fake.details, *said))


def _torch_said(error: Any, reason: str) -> tuple[str, ...]:
    """torch's own words, unless they say nothing more than `reason` (or the op's name alone)."""
    said = _message(error)
    return () if said == reason or " " not in said else (f"torch: {said}",)


def explain_failed_test(test: str, error: Any, target: Target) -> tuple[str, str]:
    """torch's reason for a failing test in plain words, and the likely fix."""
    message = _message(error)
    output = _OUTPUT.search(message)
    which = f" for output {output.group(1)}," if output else ""
    shapes = _SHAPES.search(message)
    if test == "test_faketensor" and shapes:  # torch names the real output's first
        real, fake = shapes.groups()
        return f"register_fake returns shape {fake}{which} where the op returns {real}", HINTS[test]
    dtypes = _DTYPES.search(message)
    if test == "test_faketensor" and dtypes:
        real, fake = dtypes.groups()
        return f"register_fake returns {fake}{which} where the op returns {real}", HINTS[test]
    if "no fake impl" in message or type(error).__name__ == "UnsupportedOperatorException":
        return "the op has no fake implementation", NO_FAKE_HINT.format(
            register=_registration(target, "register_fake")
        )
    mutated = _MUTATED.search(message)
    if test == "test_schema" and mutated and mutated.group(1) in target.parameters:
        index = target.parameters.index(mutated.group(1))
        reason = f"the op writes into argument {index} ({mutated.group(1)}), which its schema "
        return reason + "does not declare mutable (mutates_args)", HINTS[test]
    if test == "test_autograd_registration" and "does not have an autograd kernel" in message:
        reason = (
            "the op has no autograd kernel: autograd differentiates its backend kernel "
            "instead, which torch deprecates and which can be silently wrong"
        )
        return reason, NO_AUTOGRAD_HINT.format(register=_registration(target, "register_autograd"))
    if "no autograd formula was registered" in message:
        return "the op has no backward: nothing registered with register_autograd", (
            NO_BACKWARD_FOR_MUTATION
            if target.dirty
            else f"register the backward with {_registration(target, 'register_autograd')}"
        )
    return _first_sentence(message.removeprefix(f"{target.op_name}: ")), HINTS[test]


def _registration(target: Target, method: str) -> str:
    """How the user calls `method` (register_fake, register_autograd) for this op: the
    CustomOpDef's own method, or torch.library's function for an op defined otherwise."""
    definition = target.obj
    own = hasattr(definition, method) and hasattr(definition, "_init_fn")
    name = f"{definition._init_fn.__name__}.{method}" if own else f"torch.library.{method}"
    op = "" if own else f'"{target.op_name}"'
    if method == "register_fake":
        return f"`@{name}({op})`" if op else f"`@{name}`"
    return f"`{name}({op + ', ' if op else ''}backward, setup_context=setup_context)`"


def _where(context: CaseContext, test: str, error: Any) -> tuple[str | None, int | None]:
    """The user's line the error came from, else the registration the test is about."""
    raised_at = _user_line(error)
    if raised_at is not None:
        return raised_at
    definition = context.target.obj
    registered = {
        "test_faketensor": getattr(definition, "_abstract_fn", None),
        "test_aot_dispatch_dynamic": getattr(definition, "_abstract_fn", None),
        "test_autograd_registration": getattr(definition, "_backward_fn", None),
    }.get(test) or getattr(definition, "_init_fn", None)
    return source_of(registered) if registered is not None else (None, None)


def _user_line(error: Any) -> tuple[str, int] | None:
    """The last line of the user's code in the error's traceback, if any."""
    if not isinstance(error, BaseException):
        return None
    last = last_user_frame(error)
    if last is None or last.lineno is None:
        return None
    return last.filename, last.lineno


def _message(error: Any) -> str:
    text = str(error).strip()
    return text or type(error).__name__


def _first_sentence(message: str) -> str:
    """torch's reason up to its first full stop (its messages go on to advice of their own)."""
    first = message.splitlines()[0]
    end = re.search(r"(?<!e\.g)(?<!i\.e)[.!](\s|$)", first)
    return first[: end.start() + 1] if end else first
