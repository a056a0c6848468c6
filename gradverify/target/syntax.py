"""The user's methods as syntax trees: one parser for every reader of a method's source
(lint's rules read whole files instead, to keep the file's line numbers)."""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from typing import Any

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
# Names that stand for a module in the code gradverify reads, whatever the module imports.
MODULE_NAMES = frozenset({
    "torch", "F", "functional", "nn", "linalg", "fft", "special", "np", "numpy", "math",
})  # fmt: skip


def parsed_function(function: Any) -> FunctionNode | None:
    """`function`'s own source as a syntax tree (decorators unwrapped, dedented), or None
    when there is no source to read or it does not parse. Parsed once per function: many
    readers ask for one target's forward and backward (the tree is shared; never change it)."""
    function = inspect.unwrap(function) if function is not None else None
    try:
        return _parsed_once(function)
    except TypeError:  # an unhashable callable: parsed each time
        return _parsed(function)


@functools.lru_cache(maxsize=256)
def _parsed_once(function: Any) -> FunctionNode | None:
    return _parsed(function)


def _parsed(function: Any) -> FunctionNode | None:
    try:
        source = textwrap.dedent(inspect.getsource(function))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, ValueError):
        return None
    node = tree.body[0] if tree.body else None
    return node if isinstance(node, FunctionNode) else None


def called_name(call: ast.Call) -> str:
    """The name a call calls: `softmax` of `torch.softmax(x)` and of `x.softmax()`."""
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def literal_int(node: ast.AST) -> int | None:
    """The int a literal spells (`2`, `-1`), or None for anything else (a bool included)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = literal_int(node.operand)
        return -inner if inner is not None else None
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def own_nodes(function: FunctionNode) -> list[ast.AST]:
    """The nodes of a function's body, without those of functions and classes nested in it."""
    found: list[ast.AST] = []
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        found.append(node)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            pending.extend(ast.iter_child_nodes(node))
    return found


def is_module(node: ast.AST | None, modules: frozenset[str] = MODULE_NAMES) -> bool:
    """Whether `node`, a call's receiver, is a module (`torch`, `torch.linalg`, `F`) rather
    than a value: the root of its attribute chain is a name that stands for a module."""
    root = node
    while isinstance(root, ast.Attribute):
        root = root.value
    return isinstance(root, ast.Name) and root.id in modules
