"""The static half of `lint`: a Function's methods as syntax trees, and what they reveal.

Each method is found in its parsed module by the line its code object starts on, so every
line number here is already a line of the user's file.
"""

from __future__ import annotations

import ast
import inspect
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from gradverify.target.dirty import input_bindings, input_subscript
from gradverify.target.syntax import FunctionNode, own_nodes

SAVED_CONTAINERS = frozenset({"saved_tensors", "saved_variables"})
SNIPPET_LENGTH = 60


class SourceUnavailable(Exception):
    """A method's source cannot be read (made by exec, built in, or its file is gone)."""


@dataclass(frozen=True)
class Method:
    """One method of the Function, as a syntax tree in its file."""

    name: str
    file: str
    node: FunctionNode
    parameters: tuple[str, ...]  # positional, ctx included (cls of a classmethod left out)
    vararg: str | None

    @property
    def line(self) -> int:
        return self.node.lineno

    @property
    def first(self) -> str | None:
        return self.parameters[0] if self.parameters else None


@dataclass(frozen=True)
class Return:
    """A `return` of backward whose values can be counted without running it."""

    line: int
    kinds: tuple[str, ...]  # per value: "none", "value" (certainly not None) or "maybe"


@dataclass(frozen=True)
class SavedArgument:
    """One argument of a `ctx.save_for_backward(...)` call."""

    position: int
    code: str
    constant: bool  # a literal other than None: never a tensor
    input_index: int | None  # the forward argument it is, unchanged, if it is one


@dataclass(frozen=True)
class SaveCall:
    line: int
    arguments: tuple[SavedArgument, ...]
    starred: bool  # save_for_backward(*tensors): positions after the star are unknown


def find_method(function_class: type, name: str) -> Method:
    """`name` of `function_class` as a syntax tree; SourceUnavailable when there is none."""
    try:
        function = inspect.unwrap(getattr(function_class, name))
    except ValueError as error:  # a cycle of __wrapped__
        raise SourceUnavailable(str(error)) from None
    code = getattr(function, "__code__", None)
    if code is None:
        raise SourceUnavailable("not Python code")
    try:
        file = inspect.getsourcefile(function)
        lines, _ = inspect.findsource(function)
    except (OSError, TypeError) as error:
        raise SourceUnavailable(str(error)) from None
    try:
        tree = _parse("".join(lines))
    except (SyntaxError, ValueError) as error:
        raise SourceUnavailable(f"its file does not parse: {error}") from None
    node = _function_at(tree, code.co_name, code.co_firstlineno)
    if file is None or node is None:
        raise SourceUnavailable("not found in its file")
    arguments = node.args
    parameters = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
    if isinstance(inspect.getattr_static(function_class, name, None), classmethod):
        parameters = parameters[1:]
    vararg = arguments.vararg.arg if arguments.vararg else None
    return Method(name, file, node, tuple(parameters), vararg)


@lru_cache(maxsize=16)
def _parse(text: str) -> ast.Module:
    return ast.parse(text)


def _function_at(tree: ast.Module, name: str, first_line: int) -> FunctionNode | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            starts = {node.lineno, *(decorator.lineno for decorator in node.decorator_list)}
            if first_line in starts:
                return node
    return None


def snippet(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= SNIPPET_LENGTH else text[: SNIPPET_LENGTH - 3] + "..."


def is_name(node: ast.AST, name: str | None) -> bool:
    return name is not None and isinstance(node, ast.Name) and node.id == name


def constant_int(index: ast.expr) -> int | None:
    if isinstance(index, ast.Constant) and type(index.value) is int:
        return index.value
    return None


# GV101: where `ctx.<attribute> = ...` is written.
def ctx_assignments(method: Method, ctx: str | None) -> dict[str, int]:
    """The first line assigning each attribute of ctx (`ctx.name = ...`, `setattr(ctx, ...)`)."""
    lines: dict[str, int] = {}

    def seen(attribute: str, line: int) -> None:
        lines[attribute] = min(line, lines.get(attribute, line))

    for node in ast.walk(method.node):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if is_name(node.value, ctx):
                seen(node.attr, node.lineno)
        elif (
            isinstance(node, ast.Call)
            and is_name(node.func, "setattr")
            and len(node.args) >= 2
            and is_name(node.args[0], ctx)
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            seen(node.args[1].value, node.lineno)
    return lines


# GV102: `.data`.
def data_uses(method: Method, ctx: str | None) -> list[tuple[int, str]]:
    """(line, code) of every `<expression>.data`, except ctx's own attributes and torch.utils.data."""
    found = set()
    for node in ast.walk(method.node):
        if not isinstance(node, ast.Attribute) or node.attr != "data":
            continue
        if is_name(node.value, ctx):
            continue
        if isinstance(node.value, ast.Attribute) and node.value.attr == "utils":
            continue
        found.add((node.lineno, snippet(node)))
    return sorted(found)


# GV104: how many values each `return` of backward gives.
def counted_returns(backward: Method) -> list[Return]:
    """backward's `return`s whose number of values is known statically, in line order."""
    bindings = _bindings(backward)
    returns = []
    for node in own_nodes(backward.node):
        if isinstance(node, ast.Return):
            value = node.value if node.value is not None else ast.Constant(value=None)
            counted = _values(value, bindings, frozenset())
            if counted is not None:
                kinds = tuple(_kind(element, bindings) for element in counted[1])
                returns.append(Return(node.lineno, kinds))
    return sorted(returns, key=lambda r: r.line)


_Bindings = dict[str, list[ast.expr | None]]  # None: bound in a way that is not followed
_Values = tuple[bool, tuple[ast.expr, ...]]  # (is a tuple, the values)


def _bindings(method: Method) -> _Bindings:
    """Every value each name of backward is bound to by `name = value`, in any order."""
    bindings: _Bindings = {name: [ast.Name(id=name)] for name in method.parameters[1:]}
    arguments = method.node.args
    others = [method.first, method.vararg, arguments.kwarg.arg if arguments.kwarg else None]
    for name in (*others, *(a.arg for a in arguments.kwonlyargs)):
        if name:
            bindings[name] = [None]
    for node in own_nodes(method.node):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bindings.setdefault(target.id, []).append(node.value)
        for name in _other_bindings(node):
            bindings.setdefault(name, []).append(None)
    return bindings


_TARGETED = (
    ast.AugAssign | ast.AnnAssign | ast.For | ast.AsyncFor | ast.NamedExpr | ast.comprehension
)


def _other_bindings(node: ast.AST) -> list[str]:
    """Names a node binds other than by `name = value`."""
    targets: list[ast.AST] = []
    if isinstance(node, ast.Assign):
        targets = [t for t in node.targets if not isinstance(t, ast.Name)]
    elif isinstance(node, _TARGETED):
        targets = [node.target]
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        targets = [node.optional_vars]
    elif isinstance(node, ast.Import | ast.ImportFrom):
        return [alias.asname or alias.name.split(".")[0] for alias in node.names]
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar):
        return [node.name] if node.name else []
    elif isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest else []
    elif isinstance(node, ast.Global | ast.Nonlocal):
        return list(node.names)
    return [
        leaf.id
        for target in targets
        for leaf in ast.walk(target)
        if isinstance(leaf, ast.Name) and isinstance(leaf.ctx, ast.Store)
    ]


def _values(node: ast.expr, bindings: _Bindings, resolving: frozenset[str]) -> _Values | None:
    """The values an expression evaluates to, when their number is known without running it."""
    if isinstance(node, ast.Tuple):
        if any(isinstance(element, ast.Starred) for element in node.elts):
            return None
        return True, tuple(node.elts)
    if isinstance(node, ast.Constant | ast.UnaryOp | ast.Compare):
        return False, (node,)
    if isinstance(node, ast.Name):
        return _name_values(node, bindings, resolving)
    if isinstance(node, ast.IfExp):
        return _merge([_values(branch, bindings, resolving) for branch in (node.body, node.orelse)])
    if isinstance(node, ast.BinOp):
        left = _values(node.left, bindings, resolving)
        right = _values(node.right, bindings, resolving)
        sides = ((node.left, left), (node.right, right))
        if any(v is not None and not v[0] and not _int_like(e, bindings) for e, v in sides):
            return False, (node,)  # arithmetic on a tensor gives one tensor (int * tuple would not)
        if isinstance(node.op, ast.Add) and left is not None and right is not None:
            return True, left[1] + right[1]  # tuple concatenation
    return None  # calls, attributes, subscripts...: could be anything, tuples included


def _int_like(node: ast.expr, bindings: _Bindings) -> bool:
    """An int, or a name bound to one somewhere: `n * grads` repeats a tuple."""
    if isinstance(node, ast.Name):
        return any(
            value is not None and _int_like(value, {}) for value in bindings.get(node.id, [])
        )
    return isinstance(node, ast.Constant) and isinstance(node.value, int)


def _name_values(node: ast.Name, bindings: _Bindings, resolving: frozenset[str]) -> _Values | None:
    bound = bindings.get(node.id)
    if not bound or node.id in resolving:
        return None
    counted: list[_Values | None] = []
    for value in bound:
        if isinstance(value, ast.Name) and value.id == node.id:
            counted.append((False, (value,)))  # the grad_output parameter itself
        elif value is None:
            return None
        else:
            counted.append(_values(value, bindings, resolving | {node.id}))
    merged = _merge(counted)
    if merged is None or merged[0]:
        return merged
    return False, (node,)


def _merge(counted: list[_Values | None]) -> _Values | None:
    """Several possible values as one: known only if they agree in number; an element
    counts as None only if it is None in all of them."""
    known = [c for c in counted if c is not None]
    if not known or len(known) != len(counted):
        return None
    if len({len(values) for _, values in known}) != 1 or len({t for t, _ in known}) != 1:
        return None
    columns = zip(*(values for _, values in known), strict=True)
    merged = tuple(
        next((value for value in column if not _is_none(value)), column[0]) for column in columns
    )
    return known[0][0], merged


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _kind(node: ast.expr, bindings: _Bindings) -> str:
    """`none` (certainly None), `value` (certainly not None) or `maybe`, for a returned value."""
    if _is_none(node):
        return "none"
    if isinstance(node, ast.Name):
        bound = bindings.get(node.id) or [None]
        if all(value is not None and _is_none(value) for value in bound):
            return "none"
        return "maybe"
    definite = ast.BinOp | ast.UnaryOp | ast.Compare | ast.Constant | ast.Tuple | ast.List
    return "value" if isinstance(node, definite) else "maybe"


# GV105: what is given to save_for_backward.
def forward_inputs(forward: Method) -> dict[str, int]:
    """forward's parameters (ctx left out) by argument position, unless rebound in forward."""
    stores = _stores(forward)
    return {name: index for index, name in enumerate(forward.parameters[1:]) if not stores[name]}


def setup_context_inputs(setup_context: Method) -> dict[str, int]:
    """Names setup_context binds, once, to forward's arguments: `x, alpha = inputs`, `x = inputs[0]`."""
    inputs = setup_context.parameters[1] if len(setup_context.parameters) > 1 else None
    named = input_bindings(setup_context.node, inputs)
    stores = _stores(setup_context)
    return {name: index for name, index in named.items() if stores[name] == 1}


def save_calls(method: Method, ctx: str | None, named: dict[str, int]) -> list[SaveCall]:
    """Every `ctx.save_for_backward(...)` in the method; `named` maps the names of forward's
    arguments to their positions (from forward_inputs or setup_context_inputs)."""
    inputs = (
        method.parameters[1]
        if method.name == "setup_context" and len(method.parameters) > 1
        else None
    )
    calls = []
    for node in ast.walk(method.node):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "save_for_backward"
            and is_name(node.func.value, ctx)
        ):
            arguments = tuple(
                _saved_argument(position, argument, named, inputs)
                for position, argument in enumerate(node.args)
            )
            starred = any(isinstance(argument, ast.Starred) for argument in node.args)
            calls.append(SaveCall(node.lineno, arguments, starred))
    return sorted(calls, key=lambda call: call.line)


def _saved_argument(
    position: int, node: ast.expr, named: dict[str, int], inputs: str | None
) -> SavedArgument:
    constant = isinstance(node, ast.Constant) and node.value is not None
    index = named.get(node.id) if isinstance(node, ast.Name) else input_subscript(node, inputs)
    return SavedArgument(position, snippet(node), constant, index)


def _stores(method: Method) -> Counter[str]:
    """How often each name is bound in the method (parameters not counted)."""
    return Counter(
        node.id
        for node in ast.walk(method.node)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del)
    )
