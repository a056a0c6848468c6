"""A target's source files: its module file and every file of the user's project it imports,
found by reading `import` statements (nothing is imported, so no torch). The result cache keys
a case on them; pre-commit's changed-file selection runs the specs whose target they hold."""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

from gradverify.spec.identity import absolute_module, module_file_in
from gradverify.spec.targets import module_of


def target_source_files(target: str, project: Path) -> list[Path]:
    """`source_files`, or for a module installed outside the project, the files of its own
    package found on sys.path (its imports of other packages are not followed)."""
    files = source_files(target, project)
    module = module_of(target)
    if files or module is None or module.endswith(".py") or "/" in module:
        return files
    top = module.split(".")[0]
    for entry in sys.path:
        root = Path(entry or ".").resolve()
        if (root / top).is_dir() or (root / f"{top}.py").is_file():
            return source_files(target, root, within=top)
    return []


def source_files(target: str, project: Path, within: str | None = None) -> list[Path]:
    """The target's module file and every project file it imports, transitively (sorted);
    with `within`, only the files of that top-level package; none for an op given as
    `op:ns::name`: no module of the project is named as registering it."""
    module_part = module_of(target)
    if module_part is None:
        return []
    if module_part.endswith(".py") or "/" in module_part:
        start = (project / module_part).resolve()
        first = [start] if start.is_file() else []
        package = package_of(start)
    else:
        first = _module_files(module_part, project)
        package = module_part.rpartition(".")[0]
    seen: set[Path] = set()
    queue = [(file, package) for file in first]
    while queue:
        file, package = queue.pop()
        if file in seen:
            continue
        seen.add(file)
        for name in _imports(file, package):
            if within is not None and name.split(".")[0] != within:
                continue
            queue.extend((found, name.rpartition(".")[0]) for found in _module_files(name, project))
    return sorted(seen)


def _module_files(dotted: str, project: Path) -> list[Path]:
    """The files that importing `dotted` runs, if they live in the project: packages' __init__ too."""
    parts = dotted.split(".")
    found = (module_file_in(".".join(parts[:depth]), project) for depth in range(1, len(parts) + 1))
    return [file for file in found if file is not None]


def package_of(file: Path) -> str:
    """The package a file's relative imports start from (an `__init__.py`'s own)."""
    parts: list[str] = []
    directory = file.parent
    while (directory / "__init__.py").is_file():
        parts.insert(0, directory.name)
        directory = directory.parent
    return ".".join(parts)


def _imports(file: Path, package: str) -> list[str]:
    """Dotted names imported by `file` (relative imports resolved against `package`)."""
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return []
    return _imports_in(text, str(file), package)


# Cached per process (selection asks about the same files often), by text: a file edited
# while the process lives (a session that runs twice) is read again, never a stale key.
@functools.lru_cache(maxsize=256)
def _imports_in(text: str, filename: str, package: str) -> list[str]:
    try:
        tree = ast.parse(text, filename=filename)
    except (SyntaxError, ValueError):
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = absolute_module(node.module, node.level, package)
            if base is None:
                continue
            names.append(base)
            # `from pkg import mod` may name a submodule.
            names.extend(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return names
