"""The functions forward and backward call, read from source without importing anything:
module-level helpers (`_silu_grad(x, g)`) and kernels (`kernel[grid](x, y, n)`,
`wrap_triton(kernel)[grid](...)`, a `@triton.jit` function is plain Python source) defined
in the Function's module or in a module of its package. Their comparisons with number
literals (`tl.where(x < -1.0, ...)`), clamp bounds, module constants and defaults compared
with are branch points as much as forward's own: without them the inferred inputs never
cross a branch a kernel holds.

Names resolve through each module's syntax tree (its functions, its imports, at the top
and inside the functions followed): `silu.silu_backward`, a launch through a variable
(`kernels.silu_forward[grid]` with `kernels` returned by a helper) or a kernel named by a
string (`getattr(module, "silu_backward")`) resolve against the package's modules the
followed code imports. Each file is parsed once; a module that is not imported is found
on disk below its package, never imported.

Importing this module never imports torch.
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gradverify.inference.reading.dataflow import Sources, flow_of, local_sources, sources_in
from gradverify.inference.reading.source import BranchPoints, branch_points, literal_comparisons
from gradverify.target.syntax import FunctionNode, parsed_function

if TYPE_CHECKING:
    from gradverify.target.loaded import Target

DEPTH = 3  # levels of calls followed below forward and backward
MOST = 32  # functions followed at most, for one target


@dataclass(frozen=True)
class ModuleSyntax:
    """A module's top level as its source reads: functions, imports, number constants."""

    name: str
    package: str  # where its relative imports start
    functions: dict[str, FunctionNode]  # a class's methods as `Class.method`
    imports: dict[str, tuple[str, str | None]]  # alias -> (module, attribute or None)
    constants: dict[str, float]


@dataclass(frozen=True)
class Helper:
    """A function followed from forward or backward, the module it is defined in, and the
    Function's parameters each of its names derives from, where the calls show it."""

    node: FunctionNode
    module: ModuleSyntax
    derived: dict[str, Sources] = field(default_factory=dict)


def helper_points(forward: Any, backward: Any, parameters: Sequence[str]) -> BranchPoints:
    """The branch points of the functions forward and backward call, one to DEPTH levels
    down, within their package: the literals their comparisons and clamps read, and what
    the names they compare with hold as module constants or defaults; each literal also
    by the parameters of forward what it is compared with derives from (`by_input`)."""
    try:
        helpers = called_helpers(forward, backward, parameters)
    except (RecursionError, ValueError, OSError):  # a tree too deep, an unwrap cycle
        return BranchPoints()
    points = branch_points(*(helper.node for helper in helpers))
    extra: set[float] = set()
    by_input: set[tuple[str, float]] = set()
    for helper in helpers:
        defaults = _number_defaults(helper.node)
        for name in points.names:
            value = defaults.get(name, helper.module.constants.get(name))
            if value is not None:
                extra.add(abs(value))
        for operands, size in literal_comparisons(helper.node):
            for operand in operands:
                by_input |= {(name, size) for name in sources_in(operand, helper.derived)}
    magnitudes = tuple(sorted(set(points.magnitudes) | extra))
    return BranchPoints(magnitudes, points.names, points.strings, frozenset(by_input))


def target_points(target: Target) -> BranchPoints:
    """helper_points of a target's forward and backward (a plain callable's own); none for
    an op, whose kernel has no Python source to follow."""
    if target.op is not None:
        return BranchPoints()
    if not target.is_function:
        return helper_points(target.obj, None, tuple(target.parameters))
    forward = getattr(target.obj, "forward", None)
    backward = getattr(target.obj, "backward", None)
    return helper_points(forward, backward, tuple(target.parameters))


def merged(first: BranchPoints, second: BranchPoints) -> BranchPoints:
    return BranchPoints(
        tuple(sorted(set(first.magnitudes) | set(second.magnitudes))),
        first.names | second.names,
        first.strings | second.strings,
        first.by_input | second.by_input,
    )


def called_helpers(forward: Any, backward: Any, parameters: Sequence[str]) -> tuple[Helper, ...]:
    """The functions forward and backward call, breadth first, each once, at most MOST."""
    frontier: list[Helper] = []
    roots: set[str] = set()
    flow = flow_of(forward, backward, tuple(parameters))
    forward_names = {name: frozenset({name}) for name in parameters} | flow.derived
    for function, given in ((forward, forward_names), (backward, flow.derived_backward)):
        start = _start(function, given)
        if start is not None:
            frontier.append(start)
            roots.add(start.module.name.partition(".")[0])
    seen = {id(helper.node) for helper in frontier}
    known: dict[str, ModuleSyntax] = {h.module.name: h.module for h in frontier}
    loose: set[str] = set()  # names that may be functions of a module known later
    found: list[Helper] = []
    for _ in range(DEPTH):
        following: list[Helper] = []
        for helper in frontier:
            for callee in _callees(helper, roots, known, loose):
                if id(callee.node) not in seen and len(found) + len(following) < MOST:
                    seen.add(id(callee.node))
                    following.append(callee)
        for module in list(known.values()):
            for name in sorted(loose & module.functions.keys()):
                node = module.functions[name]
                if id(node) not in seen and len(found) + len(following) < MOST:
                    seen.add(id(node))
                    following.append(Helper(node, module))
        found += following
        frontier = following
    return tuple(found)


def _start(function: Any, given: dict[str, Sources]) -> Helper | None:
    if function is None:
        return None
    node = parsed_function(function)
    module_name = getattr(inspect.unwrap(function), "__module__", None)
    module = syntax(module_name) if isinstance(module_name, str) else None
    if node is None or module is None:
        return None
    return Helper(node, module, local_sources(node, given))


def _callees(
    helper: Helper, roots: set[str], known: dict[str, ModuleSyntax], loose: set[str]
) -> Iterator[Helper]:
    """The functions `helper` calls that resolve, in a module of `roots`' packages. Modules
    it imports join `known`; names that do not resolve yet join `loose`."""
    imports = dict(helper.module.imports)
    for node in ast.walk(helper.node):
        if isinstance(node, ast.Import | ast.ImportFrom):
            imports.update(_imported(node, helper.module.package))
    for module, attribute in imports.values():
        for name in (module, f"{module}.{attribute}" if attribute else module):
            if name.partition(".")[0] in roots and name not in known:
                parsed = syntax(name)
                if parsed is not None:
                    known[name] = parsed
    for node in ast.walk(helper.node):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.isidentifier()
        ):
            loose.add(node.value)  # getattr(module, "silu_backward")
        if not isinstance(node, ast.Call):
            continue
        for callee in _launched(node.func):
            resolved = _resolve(callee, helper.module, imports, roots)
            if resolved is not None:
                given = _given(resolved.node, node, helper.derived)
                yield replace(resolved, derived=local_sources(resolved.node, given))
            elif isinstance(callee, ast.Attribute) and isinstance(node.func, ast.Subscript):
                loose.add(callee.attr)  # `kernels.silu_forward[grid]`: kernels a variable


def _given(callee: FunctionNode, call: ast.Call, derived: dict[str, Sources]) -> dict[str, Sources]:
    """What each parameter of `callee` derives from, by what `call` passes it (a kernel's
    pointer by the tensor passed in its place)."""
    arguments = callee.args
    positional = [*arguments.posonlyargs, *arguments.args]
    given: dict[str, Sources] = {}
    for parameter, argument in zip(positional, call.args, strict=False):
        if isinstance(argument, ast.Starred):
            break
        given[parameter.arg] = sources_in(argument, derived)
    names = {parameter.arg for parameter in [*positional, *arguments.kwonlyargs]}
    for keyword in call.keywords:
        if keyword.arg in names:
            given[keyword.arg] = sources_in(keyword.value, derived)
    return given


def _launched(func: ast.expr) -> list[ast.expr]:
    """What a call runs: `f(...)`: f; `kernel[grid](...)`: kernel;
    `wrap_triton(kernel)[grid](...)`: kernel."""
    if isinstance(func, ast.Subscript):
        inner = func.value
        if isinstance(inner, ast.Call):
            return [inner.func, *inner.args[:1]]
        return [inner]
    return [func]


def _resolve(
    callee: ast.expr,
    module: ModuleSyntax,
    imports: dict[str, tuple[str, str | None]],
    roots: set[str],
) -> Helper | None:
    """The function `callee` names, where its module is of `roots`' packages."""
    parts: list[str] = []
    while isinstance(callee, ast.Attribute):
        parts.insert(0, callee.attr)
        callee = callee.value
    if not isinstance(callee, ast.Name):
        return None
    if not parts:
        if callee.id in module.functions and callee.id not in imports:
            return Helper(module.functions[callee.id], module)
        if callee.id not in imports:
            return None
        source, attribute = imports[callee.id]
        return _function_of(source, attribute, roots) if attribute else None
    method = f"{callee.id}.{parts[0]}"
    if len(parts) == 1 and method in module.functions and callee.id not in imports:
        return Helper(module.functions[method], module)
    if callee.id not in imports:
        return None
    source, attribute = imports[callee.id]
    dotted = ".".join([source, *([attribute] if attribute else []), *parts[:-1]])
    return _function_of(dotted, parts[-1], roots)


def _function_of(module_name: str, name: str, roots: set[str]) -> Helper | None:
    if module_name.partition(".")[0] not in roots:
        return None
    module = syntax(module_name)
    if module is None or name not in module.functions:
        return None
    return Helper(module.functions[name], module)


def _imported(node: ast.Import | ast.ImportFrom, package: str) -> dict[str, tuple[str, str | None]]:
    found: dict[str, tuple[str, str | None]] = {}
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                found[alias.asname] = (alias.name, None)
            else:
                first = alias.name.partition(".")[0]
                found[first] = (first, None)
        return found
    base = node.module or ""
    if node.level:
        parts = package.split(".")
        above = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
        base = ".".join([*above, *([node.module] if node.module else [])])
    for alias in node.names:
        if alias.name != "*":
            found[alias.asname or alias.name] = (base, alias.name)
    return found


def _number_defaults(node: FunctionNode) -> dict[str, float]:
    arguments = node.args
    positional = [*arguments.posonlyargs, *arguments.args]
    defaulted = positional[len(positional) - len(arguments.defaults) :]
    pairs = list(zip(defaulted, arguments.defaults, strict=True))
    pairs += [
        (arg, default)
        for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
        if default is not None
    ]
    return {arg.arg: value for arg, default in pairs if (value := _number(default)) is not None}


def _number(node: ast.expr) -> float | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return -inner if inner is not None else None
    value = node.value if isinstance(node, ast.Constant) else None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def syntax(module_name: str) -> ModuleSyntax | None:
    """`module_name`'s top level, parsed once per version of its file; None where there is
    no Python source to read."""
    path = _file(module_name)
    if path is None:
        return None
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        return None
    return _parsed(module_name, str(path), stamp)


@functools.lru_cache(maxsize=256)
def _parsed(module_name: str, path: str, stamp: int) -> ModuleSyntax | None:
    del stamp  # part of the cache's key only
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None
    is_package = Path(path).name == "__init__.py"
    package = module_name if is_package else module_name.rpartition(".")[0]
    functions: dict[str, FunctionNode] = {}
    imports: dict[str, tuple[str, str | None]] = {}
    constants: dict[str, float] = {}
    for statement in _top_level(tree.body):
        if isinstance(statement, FunctionNode):
            functions[statement.name] = statement
        elif isinstance(statement, ast.ClassDef):  # `Knee._grad(x, g)`: a class's own helper
            for method in statement.body:
                if isinstance(method, FunctionNode):
                    functions[f"{statement.name}.{method.name}"] = method
        elif isinstance(statement, ast.Import | ast.ImportFrom):
            imports.update(_imported(statement, package))
        elif isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value is not None:
            value = _number(statement.value)
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                if isinstance(target, ast.Name) and value is not None:
                    constants[target.id] = value
    return ModuleSyntax(module_name, package, functions, imports, constants)


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """A module's statements, those under a top-level `if` or `try` included."""
    for statement in body:
        yield statement
        if isinstance(statement, ast.If):
            yield from _top_level([*statement.body, *statement.orelse])
        elif isinstance(statement, ast.Try):
            yield from _top_level([*statement.body, *statement.orelse, *statement.finalbody])


def _file(module_name: str) -> Path | None:
    """The source file of `module_name`: its own where imported, else found below its
    package's directory, without importing it."""
    loaded = sys.modules.get(module_name)
    file = getattr(loaded, "__file__", None) if loaded is not None else None
    if isinstance(file, str):
        return Path(file) if file.endswith(".py") else None
    parent, _, last = module_name.rpartition(".")
    directory = _directory(parent) if parent else None
    if directory is None:
        return None
    for path in (directory / f"{last}.py", directory / last / "__init__.py"):
        if path.is_file():
            return path
    return None


def _directory(package: str) -> Path | None:
    loaded = sys.modules.get(package)
    paths = list(getattr(loaded, "__path__", None) or []) if loaded is not None else []
    if paths:
        return Path(paths[0])
    parent, _, last = package.rpartition(".")
    above = _directory(parent) if parent else None
    return above / last if above is not None and (above / last).is_dir() else None
