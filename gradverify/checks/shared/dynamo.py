"""torch.compile for the `compile` check: available or why not, a fresh quiet compile, and
what a graph break means in the user's words and at the user's line.

torch._dynamo is imported here only, and only when the check runs: its import alone costs
seconds.
"""

from __future__ import annotations

import logging
import re
import traceback
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from gradverify.stacks import is_user_frame, last_user_frame
from gradverify.target.paths import user_path
from gradverify.usercode import first_line

BACKEND = "aot_eager"  # traces forward and backward (AOTAutograd), needs no C++ compiler


def unavailable() -> str | None:
    """Why torch.compile cannot run here (None when it can)."""
    try:
        with quiet():
            from torch._dynamo.eval_frame import check_if_dynamo_supported

            check_if_dynamo_supported()
    except Exception as error:
        return f"torch.compile is not available here: {first_line(error)}"
    return None


@contextmanager
def quiet() -> Iterator[None]:
    """No log line or warning from dynamo or AOTAutograd (a graph break logs one at WARNING);
    the logging and warning state as it was, after."""
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)


@dataclass
class Compiled:
    """`call` compiled whole (fullgraph); `graphs` counts the graphs handed to the backend."""

    run: Callable[..., Any]
    graphs: int = 0


@contextmanager
def fresh_compile(call: Callable[..., Any]) -> Iterator[Compiled]:
    """`call` under torch.compile(backend="aot_eager", fullgraph=True), compiled afresh.

    dynamo caches compiled code per code object and, past its recompile limit, silently runs
    a function eagerly; one code object (`_whole`) serves every case, so its state is reset
    before (a compile of this case alone) and after (nothing left for later checks or cases).
    """
    import torch
    import torch._dynamo

    aot_eager = torch._dynamo.lookup_backend(BACKEND)
    compiled = Compiled(run=lambda *arguments: None)

    def counting(graph: Any, example_inputs: Any) -> Any:
        compiled.graphs += 1
        return aot_eager(graph, example_inputs)

    torch._dynamo.reset()
    try:
        compiled.run = torch.compile(_whole(call), backend=counting, fullgraph=True)
        yield compiled
    finally:
        torch._dynamo.reset()


def _whole(call: Callable[..., Any]) -> Callable[..., Any]:
    def whole(*arguments: Any) -> Any:
        return call(*arguments)

    return whole


@dataclass(frozen=True)
class Break:
    """Why dynamo could not trace the target whole, in its words, and where in the user's code."""

    reason: str  # the first line of dynamo's reason
    explanation: str | None  # dynamo's "Explanation:" line, when it gives one
    hint: str | None  # dynamo's "Hint:" line
    file: str | None  # the user's frame, as reports show paths
    line: int | None
    graph_break: bool  # a graph break (the code runs in pieces) rather than an error


def explain_break(
    call: Callable[..., Any], arguments: tuple[Any, ...], error: BaseException
) -> Break:
    """What stopped fullgraph tracing: torch._dynamo.explain's first break reason and its user
    frame; failing that (an error while tracing, not a break), the error's own words."""
    import torch._dynamo
    import torch._dynamo.exc

    reasons: list[Any] = []
    torch._dynamo.reset()
    try:
        with quiet():
            reasons = list(torch._dynamo.explain(_whole(call))(*arguments).break_reasons)
    except Exception:  # the same error again, without fullgraph: the error's words will do
        reasons = []
    finally:
        torch._dynamo.reset()
    for reason in reasons:
        frames = [f for f in getattr(reason, "user_stack", []) if is_user_frame(f.filename)]
        if frames:
            return _described(str(reason.reason), frames[-1], graph_break=True)
    if reasons:  # a break at the call itself (a Function dynamo refuses whole): no user line
        return _described(str(reasons[0].reason), None, graph_break=True)
    cause = _cause(error)
    frame = _user_frame_in(str(error)) or last_user_frame(cause)
    # Unsupported is what a graph break raises under fullgraph; without it, dynamo runs that
    # code eagerly (explain lists no break when it refuses the whole call).
    unsupported = isinstance(cause, torch._dynamo.exc.Unsupported)
    return _described(_torch_words(cause), frame, graph_break=unsupported)


def _described(text: str, frame: traceback.FrameSummary | None, graph_break: bool) -> Break:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    reason = lines[0] if lines else "(no reason given)"
    return Break(
        reason=reason,
        explanation=_labelled(lines, "Explanation:"),
        hint=_labelled(lines, "Hint:"),
        file=user_path(frame.filename) if frame is not None else None,
        line=frame.lineno if frame is not None else None,
        graph_break=graph_break,
    )


def _labelled(lines: list[str], label: str) -> str | None:
    found = next((line for line in lines if line.startswith(label)), None)
    return found.removeprefix(label).strip() if found else None


def _cause(error: BaseException) -> BaseException:
    """What the backend raised, for "backend='...' raised:" (our counting wrapper's name
    would mean nothing to the user)."""
    inner = getattr(error, "inner_exception", None)
    return _cause(inner) if isinstance(inner, BaseException) else error


def _torch_words(error: BaseException) -> str:
    """The error's message without dynamo's advice on debugging it."""
    text = str(error).split("\nfrom user code:")[0]
    text = text.split("\nSet TORCHDYNAMO_VERBOSE")[0].strip()
    if type(error).__module__.startswith("torch._dynamo"):  # its message says what it is
        return text or type(error).__name__
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def _user_frame_in(text: str) -> traceback.FrameSummary | None:
    """The last user frame of dynamo's "from user code:" stack, which it prints, not keeps."""
    frames = [
        traceback.FrameSummary(match.group(1), int(match.group(2)), match.group(3))
        for match in _FRAME.finditer(text.partition("\nfrom user code:")[2])
        if is_user_frame(match.group(1))
    ]
    return frames[-1] if frames else None
