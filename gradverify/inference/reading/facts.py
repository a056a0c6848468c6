"""`CodeFacts`: the prose around one Function, read once and shared by every reader that
asks (as coverage.py parses a file once for every report): the docstrings of its class,
bases and methods, the comments in its body, its module's docstring where the module holds
no other Function, and the callers in its package that have a docstring. The syntax trees
of its methods are parsed once too (gradverify.target.syntax.parsed_function), and which
receiver is a module (`torch.gather(x, ...)` against `x.gather(...)`) has one answer there,
`is_module`, where readers and rules had four copies with three answers.

Importing this module never imports torch.
"""

from __future__ import annotations

import functools
import inspect
import io
import sys
import tokenize
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gradverify.inference.reading.call_sites import Caller, callers_of
from gradverify.inference.reading.docstrings import docstrings

if TYPE_CHECKING:
    from gradverify.target.loaded import Target


@dataclass(frozen=True)
class CodeFacts:
    """What one Function's code says (empty for an op or a plain function)."""

    docstrings: tuple[str, ...] = ()  # its class's, its bases' (not torch's), its methods'
    comments: tuple[str, ...] = ()  # in its class body, `#` stripped
    module: str = ""
    module_doc: str | None = None  # only where the module defines no other Function
    callers: tuple[Caller, ...] = ()


def code_facts(target: Target) -> CodeFacts:
    """The facts of `target`'s code, read once per Function class."""
    if target.op is not None or not target.is_function or not isinstance(target.obj, type):
        return CodeFacts()
    return _facts_of(target.obj)


@functools.lru_cache(maxsize=256)
def _facts_of(cls: type) -> CodeFacts:
    forward = getattr(cls, "forward", None)
    backward = getattr(cls, "backward", None)
    module = sys.modules.get(getattr(cls, "__module__", "") or "")
    return CodeFacts(
        docstrings=tuple(docstrings(cls, forward, backward)),
        comments=tuple(_comments(cls)),
        module=module.__name__ if module is not None else "",
        module_doc=_only_functions_doc(cls, module),
        callers=tuple(callers_of(cls)),
    )


def _comments(cls: type) -> list[str]:
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return []
    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                found.append(token.string.lstrip("#").strip())
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return found
    return found


def _only_functions_doc(cls: type, module: types.ModuleType | None) -> str | None:
    """The module's docstring where `cls` is the only Function it defines: a module's words
    speak of what it holds, and of one Function only when it holds one."""
    doc = getattr(module, "__doc__", None)
    if module is None or not isinstance(doc, str) or module.__name__.startswith("torch"):
        return None
    functions = {
        value
        for value in vars(module).values()
        if inspect.isclass(value)
        and value.__module__ == module.__name__
        and any(base.__name__ == "Function" for base in value.__mro__[1:])
    }
    return inspect.cleandoc(doc) if functions <= {cls} else None
