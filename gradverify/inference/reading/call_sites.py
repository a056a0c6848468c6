"""How the package itself calls a Function: its `Fn.apply(...)` call sites, found statically
in the Function's own file and the other files of its package, and the literal values and
module-level functions they pass (`_GSMSample.apply(x, alpha, (2, 3))`, `Solve.apply(rhs, y0)`
with `def rhs(t, y)` beside it). Where every call site passes the same literal for an
argument, inference passes it too.

Importing this module never imports torch.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gradverify.target.loaded import Target

MOST_FILES = 200  # files of one package read at most
LARGEST = 300_000  # characters: larger files are skipped (generated tables)


@dataclass(frozen=True)
class Passed:
    """What every call site passes at one position: a literal, or a function of the
    Function's own module (`module:name`)."""

    value: Any
    where: str  # file:line of the first call site
    function: bool = False


def passed_at_call_sites(target: Target) -> dict[int, Passed]:
    """Positional index -> what every `Fn.apply(...)` call site found passes there, for the
    positions where they all agree; {} where no call site is found."""
    if not target.is_function or not isinstance(target.obj, type):
        return {}
    own = _source_path(target.obj)
    if own is None:
        return {}
    module = getattr(target.obj, "__module__", "")
    seen: dict[int, list[tuple[Any, str, bool]]] = {}
    calls = 0
    for path in _package_files(own):
        for call in _apply_calls(path, target.obj.__name__):
            calls += 1
            for index, argument in enumerate(call.args):
                if isinstance(argument, ast.Starred):
                    break
                value = _passed(argument, path == own, module, path)
                if value is not None:
                    seen.setdefault(index, []).append(value)
    found = {}
    for index, values in seen.items():
        first = values[0]
        if len(values) == calls and all(v[:1] == first[:1] and v[2] == first[2] for v in values):
            found[index] = Passed(first[0], first[1], first[2])
    return found


def buffers_at_call_sites(target: Target) -> dict[int, str]:
    """Positional index -> file:line, where every `Fn.apply(...)` call site passes a buffer
    its module registers (`Fn.apply(x, self.filt)` beside `self.register_buffer("filt", ...)`):
    a constant of the model, never differentiated."""
    if not target.is_function or not isinstance(target.obj, type):
        return {}
    own = _source_path(target.obj)
    if own is None:
        return {}
    calls: list[dict[int, str]] = []
    for path in _package_files(own):
        text = _text(path)
        for call in _apply_calls(path, target.obj.__name__):
            calls.append(
                {
                    index: f"{path.name}:{argument.lineno}"
                    for index, argument in enumerate(call.args)
                    if _self_attribute(argument) is not None
                    and re.search(
                        rf"register_buffer\(\s*['\"]{_self_attribute(argument)}['\"]", text
                    )
                }
            )
    if not calls:
        return {}
    return {index: where for index, where in calls[0].items() if all(index in c for c in calls)}


@dataclass(frozen=True)
class Caller:
    """A class or function of the package whose body calls the Function (`Fn.apply(...)`)."""

    name: str
    where: str  # file:line of the call
    docstring: str
    # How many Functions its body applies (`A.apply`, `B.apply`): its words speak of this
    # one alone only where it applies no other.
    applies: int = 1


def callers(target: Target) -> list[Caller]:
    """Each call site's innermost enclosing function and class that have a docstring: the
    code that uses the Function, and may say what its backward gives (`Use only with
    natural gradient descent`)."""
    if not target.is_function or not isinstance(target.obj, type):
        return []
    return callers_of(target.obj)


def callers_of(function_class: type) -> list[Caller]:
    """`callers` of a Function class."""
    own = _source_path(function_class)
    if own is None:
        return []
    found: dict[tuple[str, str], Caller] = {}
    for path in _package_files(own):
        calls = _apply_calls(path, function_class.__name__)
        tree = _tree(path) if calls else None
        if tree is None:
            continue
        for call in calls:
            where = f"{path.name}:{call.lineno}"
            for kind in (ast.ClassDef, (ast.FunctionDef, ast.AsyncFunctionDef)):
                enclosing = _innermost(tree, call.lineno, kind)
                text = ast.get_docstring(enclosing) if enclosing is not None else None
                if enclosing is not None and text:
                    key = (path.name, enclosing.name)
                    applied = len(_applied_names(enclosing))
                    found.setdefault(key, Caller(enclosing.name, where, text, applied))
    return list(found.values())


def _applied_names(node: ast.AST) -> set[str]:
    """The names of what `node`'s body calls `.apply` on (`SaturatingClamp`, `RoundSTE`)."""
    return {
        inner.func.value.attr
        if isinstance(inner.func.value, ast.Attribute)
        else inner.func.value.id
        for inner in ast.walk(node)
        if isinstance(inner, ast.Call)
        and isinstance(inner.func, ast.Attribute)
        and inner.func.attr == "apply"
        and isinstance(inner.func.value, ast.Name | ast.Attribute)
    }


def _innermost(
    tree: ast.Module, line: int, kind: type[ast.AST] | tuple[type[ast.AST], ...]
) -> ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The innermost definition of `kind` whose lines hold `line`."""
    best: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef | None = None
    for node in ast.walk(tree):
        if not isinstance(node, kind) or not isinstance(
            node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
        ):
            continue
        end = node.end_lineno or node.lineno
        if node.lineno <= line <= end and (best is None or node.lineno > best.lineno):
            best = node
    return best


def _self_attribute(argument: ast.AST) -> str | None:
    """`name` for an argument written `self.name`."""
    if (
        isinstance(argument, ast.Attribute)
        and isinstance(argument.value, ast.Name)
        and argument.value.id == "self"
    ):
        return argument.attr
    return None


def _source_path(obj: Any) -> Path | None:
    try:
        file = inspect.getsourcefile(obj)
    except TypeError:
        return None
    return Path(file).resolve() if file else None


def _package_files(own: Path) -> list[Path]:
    """The Function's file first, then the other .py files of its package (the directories
    above it that hold an `__init__.py`)."""
    root = own.parent
    while (root / "__init__.py").exists() and (root.parent / "__init__.py").exists():
        root = root.parent
    others: list[Path] = []
    if (root / "__init__.py").exists():
        others = sorted(p.resolve() for p in root.rglob("*.py") if p.resolve() != own)
    return [own, *others[: MOST_FILES - 1]]


def _text(path: Path) -> str:
    """A file's text ("" where unreadable or too large), read once while it is unchanged."""
    try:
        return _read(path, path.stat().st_mtime_ns)
    except OSError:
        return ""


def _tree(path: Path) -> ast.Module | None:
    try:
        return _parsed(path, path.stat().st_mtime_ns)
    except OSError:
        return None


@functools.lru_cache(maxsize=1024)
def _read(path: Path, mtime: int) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""
    return text if len(text) <= LARGEST else ""


@functools.lru_cache(maxsize=64)
def _parsed(path: Path, mtime: int) -> ast.Module | None:
    try:
        return ast.parse(_read(path, mtime))
    except SyntaxError:
        return None


def _apply_calls(path: Path, name: str) -> list[ast.Call]:
    """`name.apply(...)`, `mod.name.apply(...)` and calls through an alias `f = name.apply`."""
    if f"{name}.apply" not in _text(path):
        return []
    tree = _tree(path)
    if tree is None:
        return []
    aliases = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and _is_apply(node.value, name)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            _is_apply(node.func, name)
            or (isinstance(node.func, ast.Name) and node.func.id in aliases)
        )
    ]


def _is_apply(node: ast.AST, name: str) -> bool:
    if not isinstance(node, ast.Attribute) or node.attr != "apply":
        return False
    owner = node.value
    return (isinstance(owner, ast.Name) and owner.id == name) or (
        isinstance(owner, ast.Attribute) and owner.attr == name
    )


def _passed(
    argument: ast.AST, same_file: bool, module: str, path: Path
) -> tuple[Any, str, bool] | None:
    """(value, file:line, is a function) for a literal or a function of the own module."""
    where = f"{path.name}:{getattr(argument, 'lineno', 0)}"
    try:
        value = ast.literal_eval(argument)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        value = _NOT_LITERAL
    if value is not _NOT_LITERAL and not isinstance(value, dict | set | bytes | complex):
        return (tuple(value) if isinstance(value, list) else value), where, False
    importable = bool(module) and module != "__main__"  # a spec names it by module:attr
    if (
        same_file
        and importable
        and isinstance(argument, ast.Name)
        and _defined_function(path, argument.id)
    ):
        return f"{module}:{argument.id}", where, True
    return None


_NOT_LITERAL = object()


def _defined_function(path: Path, name: str) -> bool:
    """Whether `path` defines `name` as a module-level function."""
    tree = _tree(path)
    return tree is not None and any(
        isinstance(node, ast.FunctionDef) and node.name == name for node in tree.body
    )
