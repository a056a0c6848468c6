"""What every check shares: the case it runs on, calling user code, building results."""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import torch

from gradverify.memory import is_allocation_failure, out_of_memory
from gradverify.paths import user_path
from gradverify.results import Result, Status
from gradverify.spec.models import FunctionSpec, Tolerance
from gradverify.stacks import is_user_frame
from gradverify.target.loaded import Target


@dataclass
class CaseMemo:
    """What the checks of one case work out once and share (the context itself is frozen,
    and `dataclasses.replace` hands every check the same memo)."""

    output_elements: int | None = None  # differentiable output elements, from one forward
    forward_raised: bool = False  # that forward raised: the size is unknown


@dataclass(frozen=True)
class CaseContext:
    """One case of one target, as every check sees it."""

    target: Target
    case: str
    arguments: tuple[Any, ...]  # in the declared dtypes; checks copy before use
    spec: FunctionSpec
    seed: int
    spec_file: str | None = None
    spec_line: int | None = None
    earlier: tuple[Result, ...] = field(default=())  # results of checks run before on this case
    memo: CaseMemo = field(default_factory=CaseMemo, compare=False, repr=False)

    @property
    def tolerance(self) -> Tolerance:
        return self.spec.tolerance

    def result(self, check: str, status: Status, message: str = "", **fields: Any) -> Result:
        index = fields.get("input_index")
        if index is not None and "input_name" not in fields:
            fields["input_name"] = self.target.argument_name(index)
        return Result(
            target=self.target.spec,
            case=self.case,
            check=check,
            status=status,
            message=message,
            spec_file=self.spec_file,
            spec_line=self.spec_line,
            **fields,
        )

    def describe_argument(self, index: int) -> str:
        """`argument 1 (beta)`: position among all of forward's arguments, and its name."""
        name = self.target.argument_name(index)
        return f"argument {index} ({name})" if name else f"argument {index}"

    def generator(self, salt: int) -> torch.Generator:
        return torch.Generator().manual_seed((self.seed + 7919 * salt) % (2**63))


class Check(Protocol):
    """A check: a stable id, a one-line description, and a run over one case."""

    id: ClassVar[str]
    description: ClassVar[str]

    def run(self, context: CaseContext) -> list[Result]: ...


class UserCodeError(Exception):
    """The user's forward or backward raised; a failure of the check, not of the run."""

    def __init__(self, phase: str, error: BaseException) -> None:
        self.phase = phase
        self.error = error
        self.location = _user_location(error)
        where = f" at {self.location}" if self.location else ""
        if is_allocation_failure(error):
            super().__init__(f"{phase} ran out of memory{where}: {out_of_memory(error)}")
            return
        super().__init__(f"{phase} raised {type(error).__name__}{where}: {first_line(error)}")

    @property
    def frames(self) -> tuple[str, ...]:
        return tuple(_user_frames(self.error))


# A worker process listens to phases, so that a crash or a timeout can say where it happened.
_phase_listener: Callable[[str], None] | None = None


def listen_to_phases(listener: Callable[[str], None] | None) -> None:
    """Call `listener(phase)` whenever the user's code is entered ("forward", "backward", ...)."""
    global _phase_listener
    _phase_listener = listener


@contextmanager
def user_code(phase: str) -> Iterator[None]:
    """Run the user's code, turning any exception it raises into UserCodeError."""
    if _phase_listener is not None:
        _phase_listener(phase)
    try:
        yield
    except UserCodeError:
        raise
    except Exception as error:
        raise UserCodeError(phase, error) from error


def call_forward(call: Callable[..., Any], arguments: Sequence[Any]) -> tuple[Any, ...]:
    """Run forward and return its outputs as a tuple."""
    with user_code("forward"):
        outputs = call(*arguments)
    return outputs if isinstance(outputs, tuple) else (outputs,)


def crash_result(context: CaseContext, check: str, error: UserCodeError) -> Result:
    """A crash of the user's code: a failure of this check, or a skip when an earlier check
    already failed on the structure this one relies on (so the report says it once)."""
    frames = error.frames if len(error.frames) > 1 else ()
    broken = [r for r in context.earlier if r.failed and r.check in ("forward", "backward")]
    if broken and check not in {r.check for r in broken}:
        # Say the error again only if the failure above does not already say it.
        said = any(first_line(error.error) in " ".join((r.message, *r.details)) for r in broken)
        return context.result(
            check,
            Status.SKIP,
            f"not run: `{broken[0].check}` already fails for this case"
            + ("" if said else f" ({error})"),
            same_as=broken[0].check,
        )
    return context.result(check, Status.FAIL, str(error), details=frames)


def dtype_name(dtype: torch.dtype) -> str:
    """A dtype as findings spell it: `float32`, not `torch.float32`."""
    return str(dtype).removeprefix("torch.")


def first_line(error: BaseException) -> str:
    """The first line of an exception's message: how a crash is named in one line."""
    text = str(error).strip()
    return text.splitlines()[0] if text else "(no message)"


def _user_frames(error: BaseException) -> list[str]:
    frames = [f for f in traceback.extract_tb(error.__traceback__) if is_user_frame(f.filename)]
    lines = traceback.format_list(frames) + traceback.format_exception_only(type(error), error)
    return [line.rstrip("\n") for line in "".join(lines).splitlines()]


def last_user_frame(error: BaseException) -> traceback.FrameSummary | None:
    """The innermost frame of the user's code in the error's traceback, if any."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if is_user_frame(f.filename)]
    return frames[-1] if frames else None


def _user_location(error: BaseException) -> str | None:
    last = last_user_frame(error)
    if last is None:
        return None
    return f"{user_path(last.filename)}:{last.lineno}"
