"""What a crash in the Function's jvp most likely means, said only where the evidence shows it.

A placeholder jvp (`raise NotImplementedError`, `pass`) is not a bug in a derivative: it is
a jvp that does not exist yet, and torch's own words for the `pass` case (an INTERNAL ASSERT
about floating point forward grads) point nowhere near it.
"""

from __future__ import annotations

import ast
import inspect
import traceback
from dataclasses import replace

import torch

from gradverify.checks.shared.case import CaseContext, crash_result
from gradverify.results import Result
from gradverify.target.loaded import Target
from gradverify.target.syntax import own_nodes, parsed_function
from gradverify.usercode import UserCodeError

# torch's complaint when jvp gives a tangent that is not a floating point tensor (None too).
_NOT_FLOATING = "Expected both tensor and its forward grad to be floating point or complex"
_REMEDY = (
    "implement it, or remove it: without a jvp of its own the Function does not support "
    "forward-mode AD (torch.func.jvp, torch.autograd.forward_ad), and this check does not apply"
)


def jvp_crash(context: CaseContext, check: str, error: UserCodeError) -> Result:
    """A crash of the user's code, with a clear message or a lead where jvp is to blame."""
    result = crash_result(context, check, error)
    if error.phase != "jvp" or not result.failed:
        return result
    unimplemented = _unimplemented(error, context.target)
    if unimplemented is not None:
        torch_says = f"{type(error.error).__name__}: {error.error}".rstrip(": ")
        return replace(
            result,
            message=f"the Function's jvp is not implemented ({unimplemented})",
            hint=_REMEDY,
            details=(*result.details, torch_says) if not result.details else result.details,
        )
    hint = _lead(error, context.target)
    return replace(result, hint=hint) if hint is not None else result


def _unimplemented(crash: UserCodeError, target: Target) -> str | None:
    """`it raises NotImplementedError` / `it returns None`, when jvp is a placeholder."""
    error = crash.error
    if isinstance(error, NotImplementedError):
        frames = traceback.extract_tb(error.__traceback__)
        if frames and frames[-1].name == "jvp":  # raised by jvp itself, not by a helper it calls
            where = f" at {crash.location}" if crash.location else ""
            return f"it raises NotImplementedError{where}"
        return None
    returns_none = isinstance(error, RuntimeError) and _NOT_FLOATING in str(error)
    return "it returns None" if returns_none and _returns_nothing(target) else None


def _lead(error: UserCodeError, target: Target) -> str | None:
    """The likely cause of a real crash in jvp, from what failed and on which line."""
    cause = error.error
    if isinstance(cause, RuntimeError) and _NOT_FLOATING in str(cause):
        return (
            "jvp returned a tangent that is not a floating point tensor (None, or an integer "
            "tensor): return one tangent per output, of the output's shape and dtype"
        )
    if isinstance(cause, AttributeError) and isinstance(
        getattr(cause, "obj", None), torch.autograd.function.BackwardCFunction
    ):
        return (
            f"jvp reads ctx.{cause.name}, which forward (or setup_context) never sets: set it "
            "there, before jvp runs"
        )
    if _reads_saved_tensors(cause) and not _mentions_save_for_forward(target):
        return (
            "jvp runs during forward and sees only tensors saved with ctx.save_for_forward "
            "(ctx.save_for_backward is for backward): likely a missing ctx.save_for_forward"
        )
    return None


def _reads_saved_tensors(error: BaseException) -> bool:
    """Whether the line of jvp that failed reads ctx.saved_tensors."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.name == "jvp"]
    return bool(frames) and "saved_tensors" in (frames[-1].line or "")


def _mentions_save_for_forward(target: Target) -> bool:
    try:
        return "save_for_forward" in inspect.getsource(target.obj)
    except (OSError, TypeError):
        return True  # unknown: offer no lead rather than a wrong one


def _returns_nothing(target: Target) -> bool:
    """Whether the source of jvp never returns a value (`pass`, `...`, `return None`)."""
    function = parsed_function(target.obj.jvp)
    if function is None:
        return False
    returns = [node for node in own_nodes(function) if isinstance(node, ast.Return)]
    return all(
        node.value is None or (isinstance(node.value, ast.Constant) and node.value.value is None)
        for node in returns
    )
