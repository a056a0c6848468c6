"""The targets a package's code defines, found by reading its source: nothing is imported.

`gradverify check mypkg` (a module or package name without `:Attr`) and `gradverify check
mypkg/` (a directory of Python code) stand for every `torch.autograd.Function` subclass and
every custom op defined in that code and its submodules, not merely imported there:

- a class whose base is `torch.autograd.Function` however it is imported (`torch.autograd.
  Function`, `autograd.Function`, `Function` from `torch.autograd`), or another such class of
  the same code, with a `forward` of its own or inherited from one (a base without one is a
  mixin, not a Function to check);
- an op made by `@torch.library.custom_op("ns::name")` (or `triton_op`, called or decorating),
  or declared by `torch.library.define("ns::name", ...)` or a `Library("ns", ...)`'s
  `define("name(...) -> ...")`.

A class nested in a class body is found too, named by its qualified name
(`mypkg.ops:Outer.Inner`). A Function class written inside a function body is found but
cannot be imported (each call builds another class): it is listed as needing a spec whose
target is an attribute that holds one the function built. One made by `type(...)` is not
found: name it as a `module:Attr` target, or write a spec for it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gradverify.spec.identity import absolute_module, factory_name, module_file, parsed, top_level

FUNCTION_BASES = frozenset(
    {
        "torch.autograd.Function",
        "torch.autograd.function.Function",
        "torch.autograd.function.InplaceFunction",
    }
)
# Directories that hold no code of the project's own: never searched for Functions.
_SKIPPED = frozenset({"__pycache__", "node_modules", "site-packages", "build", "dist"})


@dataclass(frozen=True)
class Definition:
    """A Function or custom op defined in the code, as gradverify.target.loading loads it."""

    target: str  # `module:Attr`, `path/file.py:Attr` or `module:ns::name`
    kind: str  # "Function" or "custom op"
    file: Path
    line: int
    # The function whose body defines it (`make_fn`, `Outer.make`): not importable.
    built_in: str | None = None

    @property
    def unimportable(self) -> str | None:
        """Why gradverify cannot load it by its target, in a line; None when it can."""
        if self.built_in is None:
            return None
        name = self.target.rpartition(".")[2]
        return (
            f"needs a spec: defined inside {self.built_in}(), so it cannot be imported; a "
            f"spec's target can be a module attribute that holds one (`{name} = "
            f"{self.built_in}(...)`)"
        )


@dataclass(frozen=True)
class _Source:
    file: Path
    module: str  # dotted, as imported
    spelling: str  # how a target names it: the dotted module, or the file's path


def python_files(directory: Path) -> list[Path]:
    """The project's .py files below `directory` (hidden, cache and virtualenv directories left out)."""
    found: list[Path] = []
    for path in sorted(directory.iterdir(), key=lambda p: p.name):
        if path.is_dir():
            if path.name.startswith(".") or path.name in _SKIPPED:
                continue
            if (path / "pyvenv.cfg").exists():
                continue
            found.extend(python_files(path))
        elif path.suffix == ".py" and path.is_file():
            found.append(path)
    return found


def is_module_name(argument: str) -> bool:
    """Whether `argument` is spelled as a dotted module name (`mypkg`, `mypkg.ops`)."""
    return all(part.isidentifier() for part in argument.split("."))


def definitions_in_module(dotted: str, project: Path | None = None) -> list[Definition] | None:
    """The definitions of module or package `dotted` and its submodules; None when no such
    module is found (from `project`, default the cwd, then sys.path)."""
    first = module_file(dotted, project)
    if first is None:
        return None
    if first.name != "__init__.py":
        return _definitions([_Source(first, dotted, dotted)])
    sources = []
    for file in python_files(first.parent):
        parts = file.relative_to(first.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        module = ".".join((dotted, *parts))
        sources.append(_Source(file, module, module))
    return _definitions(sources)


def definitions_in_directory(directory: str, project: Path | None = None) -> list[Definition]:
    """The definitions of every .py file below `directory`: those of its package when the
    directory is one that imports from `project` (default: the cwd) under its path's name
    (`mypkg/` is `mypkg`), else each named by its path (which
    gradverify.spec.identity.canonical turns into its module when that imports it)."""
    dotted = _package_at(Path(directory), (project or Path.cwd()).resolve())
    if dotted is not None:
        return definitions_in_module(dotted, project) or []
    sources = []
    for file in python_files(Path(directory)):
        sources.append(_Source(file, _module_of_file(file), file.as_posix()))
    return _definitions(sources)


def _package_at(directory: Path, project: Path) -> str | None:
    """The dotted name that imports `directory` as a package from `project`, if any."""
    try:
        parts = directory.resolve().relative_to(project).parts
    except ValueError:
        return None
    dotted = ".".join(parts)
    if not parts or not is_module_name(dotted):
        return None
    return dotted if module_file(dotted, project) == directory.resolve() / "__init__.py" else None


def _module_of_file(file: Path) -> str:
    """The dotted name a file is imported by: up through the directories with an `__init__.py`."""
    parts = [] if file.name == "__init__.py" else [file.stem]
    directory = file.resolve().parent
    while (directory / "__init__.py").is_file():
        parts.insert(0, directory.name)
        directory = directory.parent
    return ".".join(parts)


@dataclass
class _Class:
    source: _Source
    node: ast.ClassDef
    qualname: str  # `Name`, `Outer.Inner`, `make_fn.<locals>.Built`
    bases: list[str]  # dotted, as resolved in its module
    has_forward: bool
    built_in: str | None  # the function whose body defines it


def _definitions(sources: list[_Source]) -> list[Definition]:
    classes: dict[str, _Class] = {}
    ops: list[Definition] = []
    for source in sources:
        tree = parsed(source.file)
        if tree is None:
            continue
        names = _imported_names(tree, source)
        for found_class in _classes_in(top_level(tree.body), source, names, "", None):
            classes[f"{source.module}.{found_class.qualname}"] = found_class
        ops.extend(_ops(tree, source))
    functions = _function_classes(classes)
    found = [_definition(c) for key, c in classes.items() if functions.get(key)]
    return sorted([*found, *ops], key=lambda d: (d.file.as_posix(), d.line))


def _definition(found: _Class) -> Definition:
    target = f"{found.source.spelling}:{found.qualname}"
    return Definition(target, "Function", found.source.file, found.node.lineno, found.built_in)


def _classes_in(
    body: list[ast.stmt], source: _Source, names: dict[str, str], prefix: str, built_in: str | None
) -> Iterator[_Class]:
    """The classes of a body and of the class and function bodies in it, by qualified name
    (`prefix` is the enclosing one's, with its dot); a base named by a class of the same body
    is that class (a class body's names are in scope for the classes written in it)."""
    local = {s.name for s in body if isinstance(s, ast.ClassDef)}
    for statement in body:
        if isinstance(statement, ast.ClassDef):
            qualname = prefix + statement.name
            bases = [_base(base, names, source.module, prefix, local) for base in statement.bases]
            yield _Class(
                source, statement, qualname, [b for b in bases if b],
                _defines_forward(statement), built_in,
            )  # fmt: skip
            yield from _classes_in(_flat(statement.body), source, names, f"{qualname}.", built_in)
        elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            function = prefix + statement.name
            # The innermost function builds it: `make_fn`, `Outer.make`, not `a.<locals>.b`.
            builder = statement.name if built_in else function
            inner = {**names, **_imported_names_in(statement.body, source)}
            yield from _classes_in(
                _flat(statement.body), source, inner, f"{function}.<locals>.", builder
            )


def _flat(body: list[ast.stmt]) -> list[ast.stmt]:
    """A body's statements with those of its `if`, `try`, `with`, `for` and `while` blocks."""
    statements: list[ast.stmt] = []
    for statement in body:
        if isinstance(statement, ast.If | ast.For | ast.AsyncFor | ast.While):
            statements += _flat(statement.body) + _flat(statement.orelse)
        elif isinstance(statement, ast.With | ast.AsyncWith):
            statements += _flat(statement.body)
        elif isinstance(statement, ast.Try):
            statements += _flat(statement.body) + _flat(statement.orelse)
            for handler in statement.handlers:
                statements += _flat(handler.body)
        else:
            statements.append(statement)
    return statements


def _base(
    node: ast.expr, names: dict[str, str], module: str, prefix: str, local: set[str]
) -> str | None:
    if isinstance(node, ast.Name) and node.id in local:
        return f"{module}.{prefix}{node.id}"
    return _dotted(node, names, module)


def _function_classes(classes: dict[str, _Class]) -> dict[str, bool]:
    """Each Function class of the code, with whether it has a `forward` (own or inherited
    from a class of the code): to a fixpoint, since a base may come after its subclass."""
    functions: dict[str, bool] = {}
    changed = True
    while changed:
        changed = False
        for key, found in classes.items():
            direct = any(base in FUNCTION_BASES for base in found.bases)
            parents = [functions[base] for base in found.bases if base in functions]
            if not direct and not parents:
                continue
            has_forward = found.has_forward or any(parents)
            if functions.get(key) != has_forward:
                functions[key] = has_forward
                changed = True
    return functions


def _defines_forward(node: ast.ClassDef) -> bool:
    return any(
        isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == "forward"
        for item in node.body
    )


def _imported_names(tree: ast.Module, source: _Source) -> dict[str, str]:
    """What each name imported at the top of the module stands for, dotted."""
    return _imported_names_in(tree.body, source)


def _imported_names_in(body: list[ast.stmt], source: _Source) -> dict[str, str]:
    """What each name imported in a body (a module's, or a function's) stands for, dotted."""
    package = (
        source.module if source.file.name == "__init__.py" else source.module.rpartition(".")[0]
    )
    names: dict[str, str] = {}
    for statement in top_level(body):
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    names[head] = head
        elif isinstance(statement, ast.ImportFrom):
            base = absolute_module(statement.module, statement.level, package)
            if base is None:
                continue
            for alias in statement.names:
                names[alias.asname or alias.name] = f"{base}.{alias.name}"
    return names


def _dotted(node: ast.expr, names: dict[str, str], module: str) -> str | None:
    """A base class expression as a dotted name: imported names resolved, local ones in `module`."""
    chain: list[str] = []
    while isinstance(node, ast.Attribute):
        chain.insert(0, node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    head = names.get(node.id, f"{module}.{node.id}")
    return ".".join([head, *chain])


def _ops(tree: ast.Module, source: _Source) -> Iterator[Definition]:
    """custom_op objects (by the attribute that holds them) and ops declared by `define`."""
    libraries: dict[str, str] = {}  # a name bound to `Library("ns", ...)`: its namespace
    for statement in top_level(tree.body):
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            if any(factory_name(decorator) for decorator in statement.decorator_list):
                yield _op(source, statement.name, statement.lineno)
        elif isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call):
            call = statement.value
            names = [t.id for t in statement.targets if isinstance(t, ast.Name)]
            if factory_name(call) or factory_name(call.func):
                yield from (_op(source, name, statement.lineno) for name in names)
            namespace = _library_namespace(call)
            if namespace is not None:
                libraries.update(dict.fromkeys(names, namespace))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            qualified = _defined_op(node, libraries)
            if qualified is not None:
                yield _op(source, qualified, node.lineno)


def _op(source: _Source, attribute: str, line: int) -> Definition:
    return Definition(f"{source.spelling}:{attribute}", "custom op", source.file, line)


def _library_namespace(call: ast.Call) -> str | None:
    """`torch.library.Library("ns", "DEF")`: the namespace; ops defined through it are `ns::`."""
    func = call.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if called != "Library" or not call.args:
        return None
    first = call.args[0]
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def _defined_op(call: ast.Call, libraries: dict[str, str]) -> str | None:
    """The op `torch.library.define("ns::name", ...)` or `lib.define("name(...)")` declares."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr != "define" or not call.args:
        return None
    first = call.args[0]
    if not isinstance(first, ast.Constant) or not isinstance(first.value, str):
        return None
    name = first.value.split("(")[0].split(".")[0].strip()
    owner = func.value
    if isinstance(owner, ast.Name) and owner.id in libraries:
        namespace = libraries[owner.id]
        return f"{namespace}::{name}" if name.isidentifier() else None
    if "::" in name and all(part.isidentifier() for part in name.split("::")):
        return name
    return None
