"""Which arguments a Function's forward writes into and declares with `ctx.mark_dirty`.

torch refuses an in-place write into a leaf that requires grad, so such an argument is
passed as a clone of the leaf: the clone is written into, and the gradient reaches the leaf
through it. The arguments are read off the source, where `ctx.mark_dirty(...)` is called in
forward (or, new style, in setup_context); without torch, so loading a target stays cheap.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from gradverify.target.syntax import parsed_function


@dataclass(frozen=True)
class DirtyArguments:
    """forward's argument positions marked dirty; `every` when a mark could not be placed."""

    positions: tuple[int, ...] = ()
    every: bool = False

    def marks(self, index: int) -> bool:
        return self.every or index in self.positions

    def __bool__(self) -> bool:
        return self.every or bool(self.positions)


def dirty_arguments(function_class: Any, new_style: bool) -> DirtyArguments:
    """The arguments `ctx.mark_dirty` is called on (none when the source cannot be read)."""
    method = parsed_function(
        getattr(function_class, "setup_context" if new_style else "forward", None)
    )
    if not isinstance(method, ast.FunctionDef):
        return DirtyArguments()
    parameters = [a.arg for a in (*method.args.posonlyargs, *method.args.args)]
    if not parameters:
        return DirtyArguments()
    ctx = parameters[0]
    if new_style:
        inputs = parameters[1] if len(parameters) > 1 else None
        named = input_bindings(method, inputs)
    else:
        inputs, named = None, {name: index for index, name in enumerate(parameters[1:])}
    positions: set[int] = set()
    every = False
    for call in _mark_dirty_calls(method, ctx):
        for argument in call.args:
            index = _position(argument, named, inputs)
            if index is None:
                every = True  # `*tensors`, an expression: clone them all rather than crash
            else:
                positions.add(index)
    return DirtyArguments(tuple(sorted(positions)), every)


def _mark_dirty_calls(method: ast.FunctionDef, ctx: str) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(method)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "mark_dirty"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == ctx
    ]


def input_bindings(method: ast.AST, inputs: str | None) -> dict[str, int]:
    """Names setup_context binds to forward's arguments: `x, y = inputs`, `x = inputs[0]`
    (`inputs`: the name of setup_context's inputs parameter). Shared with `lint`."""
    named: dict[str, int] = {}
    for node in ast.walk(method):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Tuple | ast.List) and _is_name(node.value, inputs):
                for position, element in enumerate(target.elts):
                    if isinstance(element, ast.Starred):
                        break
                    if isinstance(element, ast.Name):
                        named[element.id] = position
            elif isinstance(target, ast.Name):
                index = input_subscript(node.value, inputs)
                if index is not None:
                    named[target.id] = index
    return named


def _position(node: ast.expr, named: dict[str, int], inputs: str | None) -> int | None:
    if isinstance(node, ast.Name):
        return named.get(node.id)
    return input_subscript(node, inputs)


def input_subscript(node: ast.expr, inputs: str | None) -> int | None:
    """`inputs[i]`: forward's argument i."""
    if (
        isinstance(node, ast.Subscript)
        and _is_name(node.value, inputs)
        and isinstance(node.slice, ast.Constant)
        and type(node.slice.value) is int
    ):
        return node.slice.value
    return None


def _is_name(node: ast.expr, name: str | None) -> bool:
    return name is not None and isinstance(node, ast.Name) and node.id == name
