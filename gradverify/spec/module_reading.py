"""A module of the user's project read as a syntax tree, for the Function-level cache key:
what each top-level statement binds, reads and does when the module is imported.

Nothing is imported. What cannot be read for sure (a star import, `globals()`, a `global`
statement, an op looked up by name) is marked, and the key then falls back to whole files.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from pathlib import Path

from gradverify.spec.identity import absolute_module

# Names whose use means the code reaches module state by name rather than through a name
# that can be followed: the key then covers whole files.
DYNAMIC_NAMES = frozenset({"globals", "vars", "eval", "exec", "__import__", "importlib", "locals"})


@dataclass(frozen=True)
class Import:
    """A name bound by an import: `module` (and `attribute` for `from module import attribute`)."""

    module: str
    attribute: str | None
    statement: ast.stmt


@dataclass
class ModuleReading:
    """The top-level statements of one file, by what they bind and do."""

    file: Path
    package: str  # for relative imports
    text: str
    bindings: dict[str, list[ast.stmt]] = field(default_factory=dict)
    imports: dict[str, Import] = field(default_factory=dict)
    # Code run on import that acts on a name of the module (`op.register_autograd(...)`,
    # `@op.register_fake`), keyed with that name; and code that may act on anything (a
    # registration by an op's name, a block), keyed for every Function of the module.
    attached: dict[str, list[ast.stmt]] = field(default_factory=dict)
    effects: list[ast.stmt] = field(default_factory=list)
    star_import: bool = False

    def source(self, statement: ast.stmt) -> tuple[int, str]:
        """The statement's first line (its decorators' included) and its text."""
        first = min([statement.lineno, *(d.lineno for d in _decorators(statement))])
        lines = self.text.splitlines()[first - 1 : statement.end_lineno]
        return first, "\n".join(lines)


def read_module(file: Path, package: str) -> ModuleReading | None:
    """The reading of `file` (relative imports resolved against `package`); None if it
    cannot be read or parsed."""
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    return _reading(file, package, text)


@functools.lru_cache(maxsize=256)  # by text: a file edited during a session is read again
def _reading(file: Path, package: str, text: str) -> ModuleReading | None:
    try:
        tree = ast.parse(text, filename=str(file))
    except (SyntaxError, ValueError):
        return None
    reading = ModuleReading(file, package, text)
    acting: list[tuple[ast.stmt, list[str | None]]] = []  # statements that do something
    for index, statement in enumerate(tree.body):
        if index == 0 and _is_docstring(statement):
            continue
        roots = _read_statement(reading, statement)
        if roots:
            acting.append((statement, roots))
    for statement, roots in acting:  # on a name of the module, or on anything
        owners = {root for root in roots if root is not None and root in reading.bindings}
        for owner in owners:
            reading.attached.setdefault(owner, []).append(statement)
        if not owners:  # `torch.set_default_dtype(...)`, a block: may change anything
            reading.effects.append(statement)
    return reading


def _read_statement(reading: ModuleReading, statement: ast.stmt) -> list[str | None]:
    """Record what `statement` binds; return the roots of what it acts on when imported
    (None: acts on something with no name, e.g. a call of a call)."""
    if isinstance(statement, ast.Import):
        for alias in statement.names:
            bound = alias.asname or alias.name.split(".")[0]
            module = alias.name if alias.asname else bound
            reading.imports[bound] = Import(module, None, statement)
        return []
    if isinstance(statement, ast.ImportFrom):
        base = absolute_module(statement.module, statement.level, reading.package)
        for alias in statement.names:
            if alias.name == "*":
                reading.star_import = True
            elif base is not None:
                reading.imports[alias.asname or alias.name] = Import(base, alias.name, statement)
        return []
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        reading.bindings.setdefault(statement.name, []).append(statement)
        # `@op.register_fake` acts on `op`; `@torch.library.register_fake("ns::op")` on an
        # op by name; `@torch.library.custom_op("ns::op")` defines this one; `@cache` wraps it.
        decorators = statement.decorator_list
        return [_root(d) for d in decorators if _registers(d) and not _defines_op(d)]
    if isinstance(statement, ast.Assign | ast.AnnAssign | ast.AugAssign) and _binds_names(
        statement
    ):
        for name in _assigned_names(statement):
            reading.bindings.setdefault(name, []).append(statement)
        return []
    # Calls, attribute assignments, if/try/for/with blocks: code run on import.
    for node in ast.walk(statement):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            reading.bindings.setdefault(node.id, []).append(statement)
        elif isinstance(node, ast.Import | ast.ImportFrom) and node is not statement:
            _read_statement(reading, node)
    if isinstance(statement, ast.Expr):
        return [_root(statement.value)]
    if isinstance(statement, ast.Assign | ast.AugAssign | ast.AnnAssign):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return [_root(target) for target in targets]
    return [None]


def _root(node: ast.expr) -> str | None:
    """The name an expression starts from: `op` in `op.register_fake(...)` or `op.x[0]`."""
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Name):
            return node.id
        else:
            return None


def _defines_op(decorator: ast.expr) -> bool:
    function = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
    return name in ("custom_op", "triton_op")


def _binds_names(statement: ast.Assign | ast.AnnAssign | ast.AugAssign) -> bool:
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    return all(
        isinstance(node, ast.Name | ast.Tuple | ast.List | ast.Starred)
        and all(
            isinstance(inner, ast.Name | ast.Tuple | ast.List | ast.Starred | ast.Store)
            for inner in ast.walk(node)
        )
        for node in targets
    )


def _assigned_names(statement: ast.stmt) -> list[str]:
    return [
        node.id
        for node in ast.walk(statement)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    ]


def _registers(node: ast.AST) -> bool:
    """Whether a decorator may register the function it decorates on something else (an
    op's `ns::name`, `@op.register_fake`, a Library), rather than only wrap it."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Constant) and isinstance(inner.value, str) and "::" in inner.value:
            return True
        name = inner.attr if isinstance(inner, ast.Attribute) else getattr(inner, "id", "")
        if isinstance(name, str) and (name.startswith(("register", "impl")) or name == "Library"):
            return True
    return False


def _decorators(statement: ast.stmt) -> list[ast.expr]:
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return statement.decorator_list
    return []


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


@dataclass
class NamesRead:
    """What a statement reads: names used bare (`twice(x)`, `h` passed along), attribute
    chains rooted at a name (`h.twice` as ["h", "twice"]), and whether it reaches state by
    name (see DYNAMIC_NAMES), so that no name can be followed for sure."""

    bare: set[str] = field(default_factory=set)
    chains: list[list[str]] = field(default_factory=list)
    dynamic: bool = False


def names_read(statement: ast.stmt) -> NamesRead:
    """The names `statement` reads (see NamesRead)."""
    read = NamesRead()
    in_chains: set[int] = set()  # the Name nodes at the root of a chain
    inner = {
        id(node.value)
        for node in ast.walk(statement)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
    }
    for node in ast.walk(statement):
        if isinstance(node, ast.Attribute) and id(node) not in inner:
            chain, root = _chain(node)
            if chain is not None and root is not None:
                read.chains.append(chain)
                in_chains.add(id(root))
                read.dynamic = read.dynamic or chain[:2] == ["torch", "ops"]
        elif isinstance(node, ast.Global):
            read.dynamic = True
    for node in ast.walk(statement):
        if isinstance(node, ast.Name):
            read.dynamic = read.dynamic or node.id in DYNAMIC_NAMES
            if id(node) not in in_chains:
                read.bare.add(node.id)
    return read


def _chain(node: ast.Attribute) -> tuple[list[str] | None, ast.Name | None]:
    parts: list[str] = []
    current: ast.expr = node
    while isinstance(current, ast.Attribute):
        parts.insert(0, current.attr)
        current = current.value
    if isinstance(current, ast.Name):
        return [current.id, *parts], current
    return None, None
