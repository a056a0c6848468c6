"""Which of forward's parameters each name of forward and backward derives from, read from
their syntax trees without running them: `q = p.abs() - half_extents` derives from `p` and
`half_extents`; in backward, `p, q = ctx.saved_tensors` from what forward saved, and
`ctx.alpha` from what forward stored there. The rules that reach the branches
(gradverify.inference.rules.branches, indices, shapes, scalars) read their facts through it.

Importing this module never imports torch.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gradverify.target.syntax import FunctionNode, called_name, parsed_function

if TYPE_CHECKING:
    from gradverify.target.loaded import Target

Sources = frozenset[str]
# Calls and attributes that read a shape or other metadata: an operand holding one
# compares sizes, dtypes or devices, not values.
SHAPE_READS = frozenset({
    "dim", "size", "numel", "len", "ndimension", "nelement", "isinstance", "is_floating_point",
    "is_complex", "type", "stride", "is_contiguous", "data_ptr", "get_device",
})  # fmt: skip
METADATA = frozenset({
    "shape", "ndim", "dtype", "device", "is_cuda", "requires_grad", "layout", "is_sparse",
    "names", "grad_fn",
})  # fmt: skip


@dataclass(frozen=True)
class Flow:
    """forward's and backward's syntax trees, and the parameters each name derives from."""

    parameters: tuple[str, ...]
    forward: FunctionNode | None = None
    backward: FunctionNode | None = None
    derived: dict[str, Sources] = field(default_factory=dict)  # forward's and ctx's names
    derived_backward: dict[str, Sources] = field(default_factory=dict)
    backward_arguments: frozenset[str] = frozenset()  # backward's own (ctx, grad, ...)

    def sources(self, node: ast.AST, in_backward: bool = False) -> Sources:
        """The parameters an expression of forward (or backward) derives from."""
        if in_backward:
            names = set(self.parameters) - self.backward_arguments
            return _sources(node, names, self.derived_backward)
        return _sources(node, set(self.parameters), self.derived)

    def functions(self) -> Iterator[tuple[FunctionNode, bool]]:
        """forward, then backward, each with whether it is backward."""
        if self.forward is not None:
            yield self.forward, False
        if self.backward is not None:
            yield self.backward, True


def flow_of(forward: Any, backward: Any, parameters: tuple[str, ...]) -> Flow:
    """The flow of `forward` (and a Function's `backward`) over `parameters`."""
    forward_node = parsed_function(forward) if forward is not None else None
    backward_node = parsed_function(backward) if backward is not None else None
    names = set(parameters)
    derived: dict[str, Sources] = {}
    saved: list[Sources] = []
    if forward_node is not None:
        for statement in statements(forward_node.body):
            _assign(statement, names, derived)
            saved = _saved(statement, names, derived) or saved
    in_backward = {key: value for key, value in derived.items() if key.startswith("ctx.")}
    arguments: frozenset[str] = frozenset()
    if backward_node is not None:
        arguments = frozenset(argument.arg for argument in backward_node.args.args)
        for statement in statements(backward_node.body):
            _unpack_saved(statement, saved, in_backward)
            _assign(statement, names - arguments, in_backward)
    return Flow(parameters, forward_node, backward_node, derived, in_backward, arguments)


def local_sources(function: FunctionNode, given: dict[str, Sources]) -> dict[str, Sources]:
    """What each name of `function` (a helper forward or backward calls) derives from, its
    parameters deriving from `given` (`_grad(x, g)` called with x from forward's `x`)."""
    derived = dict(given)
    for statement in statements(function.body):
        _assign(statement, set(), derived)
    return derived


def sources_in(node: ast.AST, derived: dict[str, Sources]) -> Sources:
    """The parameters an expression derives from, by what its names derive from."""
    return _sources(node, set(), derived)


def reads_shape(node: ast.AST) -> bool:
    """An operand that reads a shape or metadata, not a value: `x.dim()`, `x.size(0)`,
    `len(x)`, `x.shape[-1]`, `x.ndim`, `x.dtype`, `x.device`, `x.is_floating_point()`."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and called_name(inner) in SHAPE_READS:
            return True
        if isinstance(inner, ast.Attribute) and inner.attr in METADATA:
            return True
    return False


def statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements in source order, into the bodies of if, for, while, with and try."""
    for statement in body:
        yield statement
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(statement, name, None)
            if isinstance(inner, list) and not isinstance(statement, FunctionNode | ast.ClassDef):
                yield from statements(inner)
        for handler in getattr(statement, "handlers", []):
            yield from statements(handler.body)


def _assign(statement: ast.stmt, names: set[str], derived: dict[str, Sources]) -> None:
    if isinstance(statement, ast.Assign):
        targets, value = statement.targets, statement.value
    elif isinstance(statement, ast.AugAssign | ast.AnnAssign) and statement.value is not None:
        targets, value = [statement.target], statement.value
    else:
        return
    for target in targets:
        if isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List):
            for inner, part in zip(target.elts, value.elts, strict=False):
                _bind(inner, _sources(part, names, derived), derived)
        else:
            _bind(target, _sources(value, names, derived), derived)


def _bind(target: ast.AST, sources: Sources, derived: dict[str, Sources]) -> None:
    key = _key(target)
    if key is not None:
        derived[key] = derived.get(key, frozenset()) | sources
    elif isinstance(target, ast.Tuple | ast.List | ast.Starred):
        for inner in ast.walk(target):
            if inner is not target and _key(inner) is not None:
                _bind(inner, sources, derived)


def _key(node: ast.AST) -> str | None:
    """A name (`q`) or an attribute of ctx (`ctx.alpha`)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}" if node.value.id == "ctx" else None
    return None


def _sources(node: ast.AST, names: set[str], derived: dict[str, Sources]) -> Sources:
    found: set[str] = set()
    for inner in ast.walk(node):
        key = _key(inner)
        if key is None:
            continue
        if key in names:
            found.add(key)
        found |= derived.get(key, frozenset())
    return frozenset(found)


def _saved(statement: ast.stmt, names: set[str], derived: dict[str, Sources]) -> list[Sources]:
    """What `ctx.save_for_backward(a, b)` saves, each as the parameters it derives from."""
    for inner in ast.walk(statement):
        if isinstance(inner, ast.Call) and called_name(inner) == "save_for_backward":
            return [_sources(argument, names, derived) for argument in inner.args]
    return []


def _unpack_saved(statement: ast.stmt, saved: list[Sources], derived: dict[str, Sources]) -> None:
    """`a, b = ctx.saved_tensors`: each name derives from what forward saved in its place."""
    if not isinstance(statement, ast.Assign) or not isinstance(statement.value, ast.Attribute):
        return
    if statement.value.attr not in ("saved_tensors", "saved_variables"):
        return
    for target in statement.targets:
        if isinstance(target, ast.Tuple | ast.List):
            for inner, sources in zip(target.elts, saved, strict=False):
                if isinstance(inner, ast.Name):
                    derived[inner.id] = sources


def target_flow(target: Target) -> Flow:
    """The flow of a target's forward and backward (nothing to read for an op's kernel)."""
    if target.op is not None:
        return Flow(tuple(target.parameters))
    if target.is_function:
        forward = getattr(target.obj, "forward", None)
        backward = getattr(target.obj, "backward", None)
    else:
        forward, backward = target.obj, None
    return _cached_flow(forward, backward, tuple(target.parameters))


@functools.lru_cache(maxsize=64)
def _cached_flow(forward: Any, backward: Any, parameters: tuple[str, ...]) -> Flow:
    return flow_of(forward, backward, parameters)
