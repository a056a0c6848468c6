"""A loaded target (`Target`), and what every way of loading one shares: calling with clones
of the arguments forward writes into, and where an object's source is."""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gradverify.spec.identity import TargetIdentity, identify, op_name
from gradverify.target.dirty import DirtyArguments

if TYPE_CHECKING:
    from gradverify.spec.models import CheckId, FunctionSpec


@dataclass(frozen=True)
class Target:
    """A loaded target: what to call, and the names of its positional arguments."""

    spec: str  # exactly as written by the user
    obj: Any
    call: Callable[..., Any]
    parameters: tuple[str, ...]  # forward's positional parameters, without ctx
    defaults: dict[str, Any] = field(default_factory=dict)
    variadic: str | None = None  # name of forward's *args, if any
    is_function: bool = False  # a torch.autograd.Function subclass
    source_file: str | None = None
    backward_line: int | None = None
    once_differentiable: bool = False  # backward wrapped in @once_differentiable
    # Arguments forward writes into (ctx.mark_dirty; an op's mutates_args); `call` passes
    # clones of them.
    dirty: DirtyArguments = field(default_factory=DirtyArguments)
    # A torch.library custom op: its qualified name ("mylib::mysin"); None for anything else.
    op_name: str | None = None
    # An op's argument types as its schema writes them ("Tensor", "float", "int[]", "Tensor?").
    schema_types: dict[str, str] = field(default_factory=dict)
    # An op's OpOverload as torch holds it (opcheck tests it); `call` wraps it.
    op: Any = None
    # Keyword-only parameters without a default: a case's inputs, passed by position, can
    # never fill them (gradverify.target.arity says so before anything runs).
    required_keywords: tuple[str, ...] = ()
    signature_known: bool = True  # False: inspect could not read forward's signature

    def argument_name(self, index: int) -> str | None:
        """forward's name for positional argument `index` (literals counted)."""
        if index < len(self.parameters):
            return self.parameters[index]
        if self.variadic is not None:
            return f"{self.variadic}[{index - len(self.parameters)}]"
        return None

    @property
    def identity(self) -> TargetIdentity:
        """What the loaded object is by its own names (an op's, or `__module__:__qualname__`),
        for what gradverify.spec.identity cannot read from source: an op named at run time,
        a re-export it does not follow."""
        if self.op_name is not None:
            return TargetIdentity(op_name(self.op_name))
        module = getattr(self.obj, "__module__", None)
        qualname = getattr(self.obj, "__qualname__", None)
        if isinstance(module, str) and isinstance(qualname, str):
            return TargetIdentity(f"{module}:{qualname}")
        return identify(self.spec) or TargetIdentity(self.spec)

    @property
    def name(self) -> str:
        return getattr(self.obj, "__qualname__", None) or self.spec.rsplit(":", 1)[-1]


def checks_of(spec: FunctionSpec, target: Target) -> list[CheckId]:
    """The checks a case of `spec` gets on this target, in order: a custom op's include
    `compile` by default. The engine runs these and a worker tells its parent which they
    were; the pytest plugin makes its items from them."""
    return spec.checks_for(custom_op=target.op_name is not None)


def cloning(apply: Callable[..., Any], dirty: DirtyArguments) -> Callable[..., Any]:
    """`apply` given clones of the dirty tensor arguments.

    torch refuses an in-place write into a leaf that requires grad; a clone is not a leaf,
    and the gradient reaches the caller's tensor through it, which forward leaves unchanged.
    """
    import torch

    def call(*arguments: Any) -> Any:
        return apply(*(
            argument.clone() if isinstance(argument, torch.Tensor) and dirty.marks(index)
            else argument
            for index, argument in enumerate(arguments)
        ))  # fmt: skip

    return call


def source_of(obj: Any, at_def: bool = False) -> tuple[str | None, int | None]:
    """The file and first line where `obj` (a function or class) is defined, if known: its
    first decorator's, as inspect gives it (`@register_fake` says whose fake it is), or with
    `at_def` its `def` line below them (backward's `@staticmethod` says nothing)."""
    try:
        file = inspect.getsourcefile(obj)
        lines, line = inspect.getsourcelines(obj)
    except (TypeError, OSError):
        return None, None
    return file, line + (_decorator_lines(lines) if at_def else 0)


def _decorator_lines(lines: list[str]) -> int:
    """How many lines the decorators above a definition's `def` or `class` take."""
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (SyntaxError, ValueError):
        return 0
    node = tree.body[0] if tree.body else None
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.lineno - 1
    return 0
