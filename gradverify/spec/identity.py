"""One target, however it is spelled, decided by reading source files: nothing is imported.

Every form of gradverify.spec.targets names a Python object or a torch.library op, and
several spellings name the same one:

    mypkg.ops:GeluTanh   mypkg/ops.py:GeluTanh   /abs/mypkg/ops.py:GeluTanh   mypkg:GeluTanh
    mypkg.ops:cube       mypkg.ops:mypkg::cube   mypkg:mypkg::cube            op:mypkg::cube

(`mypkg:GeluTanh` when mypkg/__init__.py re-exports it; `cube` a `@custom_op("mypkg::cube")`).
A TargetIdentity is what they have in common: the object's defining module by its dotted
name (a file maps to it as gradverify.target.loading imports it: up through the directories that
hold an `__init__.py`), or the op's qualified name. Specs are found, zero-config runs are
cached and named, and `init` notices an existing spec by it.

An op defined by `@torch.library.custom_op("ns::name")` (or `triton_op`, or assigned from
one, or from `torch.ops.ns.name`) is recognised in its module's source; an op whose name is
computed at import time cannot be, and keeps the identity of the attribute that holds it
(`init`, which loads the target anyway, compares the loaded op's name too).
"""

from __future__ import annotations

import ast
import functools
import sys
from dataclasses import dataclass, field
from pathlib import Path

from gradverify.spec.targets import OP_PREFIX, parse_target

# torch.library's factories of op objects (CustomOpDef), called with the op's name first.
_OP_FACTORIES = frozenset({"custom_op", "triton_op"})
_MAX_REEXPORTS = 8  # `from .ops import cube` followed this many times at most


@dataclass(frozen=True)
class TargetIdentity:
    """What a target is: `module:Attr` (the module that defines it) or an op `ns::name`.

    Equal and hashed by `name` alone; an op's `module` (the one that registers it, when the
    spelling says) is for display and loading only: `op:mypkg::cube` is the same op.
    """

    name: str
    module: str | None = field(default=None, compare=False)

    @property
    def is_op(self) -> bool:
        return "::" in self.name

    def __str__(self) -> str:
        """The canonical spelling: `module:Attr`, `module:ns::name`, or `op:ns::name`."""
        if self.is_op:
            return f"{self.module or OP_PREFIX}:{self.name}"
        return self.name


@dataclass(frozen=True)
class _Module:
    """A module as the target names it: its dotted name, and its file if found."""

    name: str
    file: Path | None = None
    root: Path | None = None  # the directory its top package is imported from


def identify(spec: str, project: Path | None = None) -> TargetIdentity | None:
    """The identity of target `spec` (None when it has none of the forms); relative file
    paths and modules are looked up from `project` (default: the cwd), then sys.path."""
    found = _identify(spec, (project or Path.cwd()).resolve())
    return found[0] if found is not None else None


def canonical(spec: str, project: Path | None = None) -> str:
    """`spec` spelled as its identity when that spelling loads the same file from here
    (its module importable from `project` or sys.path, as gradverify.target.loading imports it);
    else `spec` as written (e.g. a file in a directory that is not on sys.path)."""
    project = (project or Path.cwd()).resolve()
    found = _identify(spec, project)
    if found is None:
        return spec
    identity, module = found
    if identity.is_op and identity.module is None:
        return str(identity)  # `op:ns::name`
    if module.file is None or _find_module(module.name, _roots(project)).file != module.file:
        return spec
    return str(identity)


def _identify(spec: str, project: Path) -> tuple[TargetIdentity, _Module] | None:
    """The identity, and the module it was found in."""
    form = parse_target(spec)
    if form is None:
        return None
    if form.module is None:
        assert form.op is not None
        return TargetIdentity(op_name(form.op)), _Module(OP_PREFIX)
    module = _locate(form.module, project)
    if form.op is not None:
        return TargetIdentity(op_name(form.op), module.name), module
    assert form.attribute is not None
    return _defined(module, form.attribute, project)


def op_name(qualified: str) -> str:
    """An op's qualified name as identities compare it: `ns::name.default` is `ns::name`."""
    return qualified.removesuffix(".default")


def _locate(module_part: str, project: Path) -> _Module:
    if module_part.endswith(".py") or "/" in module_part:
        path = Path(module_part)
        path = (path if path.is_absolute() else project / path).resolve()
        if not path.is_file():
            return _Module(module_part)  # gradverify.target.loading says "no file"
        parts = [path.stem]
        directory = path.parent
        while (directory / "__init__.py").is_file():
            parts.insert(0, directory.name)
            directory = directory.parent
        return _Module(".".join(parts), path, directory)
    return _find_module(module_part, _roots(project))


def module_file(dotted: str, project: Path | None = None) -> Path | None:
    """The file that `import dotted` runs first (a package's `__init__.py`), looked up from
    `project` (default: the cwd), then sys.path; None when there is none."""
    return _find_module(dotted, _roots((project or Path.cwd()).resolve())).file


def module_file_in(dotted: str, root: Path) -> Path | None:
    """The file `import dotted` runs first when looked up under `root` alone."""
    return _find_module(dotted, (root,)).file


def _roots(project: Path) -> tuple[Path, ...]:
    """Where `import` finds a module for gradverify.target.loading: the project, then sys.path."""
    return (project, *(Path(entry or ".").resolve() for entry in sys.path))


def _find_module(dotted: str, roots: tuple[Path, ...]) -> _Module:
    """Where `import dotted` finds it first under `roots`: a package before a module, as
    Python's own import."""
    base = dotted.split(".")
    for root in roots:
        for candidate in (
            root.joinpath(*base, "__init__.py"),
            root.joinpath(*base).with_suffix(".py"),
        ):
            if candidate.is_file():
                return _Module(dotted, candidate.resolve(), root)
    return _Module(dotted)


def _defined(module: _Module, attribute: str, project: Path) -> tuple[TargetIdentity, _Module]:
    """Follow `from X import name` re-exports to the module that defines the attribute."""
    first, dot, rest = attribute.partition(".")
    for _ in range(_MAX_REEXPORTS):
        if module.file is None:
            break
        binding = _bindings(module.file, module.name).get(first)
        if binding is None or binding.defined:
            break
        if binding.op is not None:
            if rest:  # an attribute of the op object: not the op
                break
            return TargetIdentity(binding.op, module.name), module
        assert binding.source is not None
        roots = (module.root,) if module.root is not None else ()
        module = _find_module(binding.source, (*roots, *_roots(project)))
        first = binding.name or first
        attribute = first + dot + rest
    return TargetIdentity(f"{module.name}:{attribute}"), module


@dataclass(frozen=True)
class _Binding:
    """What a module's top level binds a name to."""

    defined: bool = False  # a class, function or value defined here
    op: str | None = None  # a torch.library op, by its qualified name
    source: str | None = None  # imported: `from source import name`
    name: str | None = None


@functools.cache
def _read(file: Path, mtime: int) -> ast.Module | None:
    try:
        return ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
    except (OSError, SyntaxError, ValueError):
        return None


def parsed(file: Path) -> ast.Module | None:
    """The syntax tree of a Python file, parsed once while it is unchanged (None: unreadable
    or not Python)."""
    try:
        return _read(file, file.stat().st_mtime_ns)
    except OSError:
        return None


def _bindings(file: Path, module: str) -> dict[str, _Binding]:
    tree = parsed(file)
    if tree is None:
        return {}
    package = module if file.name == "__init__.py" else module.rpartition(".")[0]
    found: dict[str, _Binding] = {}
    for statement in top_level(tree.body):
        found.update(_bound_by(statement, package))
    return found


def top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """The module's statements, with those of top-level `if` and `try` blocks."""
    statements: list[ast.stmt] = []
    for statement in body:
        if isinstance(statement, ast.If):
            statements += top_level(statement.body) + top_level(statement.orelse)
        elif isinstance(statement, ast.Try):
            statements += top_level(statement.body)
            for handler in statement.handlers:
                statements += top_level(handler.body)
        else:
            statements.append(statement)
    return statements


def _bound_by(statement: ast.stmt, package: str) -> dict[str, _Binding]:
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        ops = [factory_name(decorator) for decorator in statement.decorator_list]
        op = next((name for name in ops if name is not None), None)
        return {statement.name: _Binding(defined=op is None, op=op)}
    if isinstance(statement, ast.ImportFrom):
        source = absolute_module(statement.module, statement.level, package)
        if source is None:
            return {}
        return {
            alias.asname or alias.name: _Binding(source=source, name=alias.name)
            for alias in statement.names
            if alias.name != "*"
        }
    if isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value is not None:
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        op = _op_of(statement.value)
        return {
            target.id: _Binding(defined=op is None, op=op)
            for target in targets
            if isinstance(target, ast.Name)
        }
    return {}


def _op_of(value: ast.expr) -> str | None:
    """The op an assigned value is: `custom_op("ns::name", fn)`, `custom_op("ns::name")(fn)`
    or `torch.ops.ns.name`."""
    if isinstance(value, ast.Call):
        return factory_name(value) or factory_name(value.func)
    chain: list[str] = []
    node: ast.expr = value
    while isinstance(node, ast.Attribute):
        chain.insert(0, node.attr)
        node = node.value
    is_torch = isinstance(node, ast.Name) and node.id == "torch"
    if is_torch and chain[:1] == ["ops"] and len(chain) in (3, 4):
        return op_name(f"{chain[1]}::{'.'.join(chain[2:])}")
    return None


def factory_name(node: ast.expr) -> str | None:
    """The op name given to a `custom_op(...)` / `torch.library.triton_op(...)` call."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if called not in _OP_FACTORIES:
        return None
    arguments = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "name")]
    for argument in arguments:
        name = argument.value if isinstance(argument, ast.Constant) else None
        if isinstance(name, str) and "::" in name:
            return op_name(name)
    return None


def absolute_module(module: str | None, level: int, package: str) -> str | None:
    """The module a `from` import at `level` dots names, written in `package`."""
    if level == 0:
        return module
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    anchor = parts[: len(parts) - (level - 1)]
    return ".".join([*anchor, module] if module else anchor) or None
