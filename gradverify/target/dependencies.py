"""A missing dependency told apart from a broken module of the user's, read from the message
of the import error (a worker's message is all the parent gets): nothing is imported.

`No module named 'triton'` raised while importing `mypkg.ops`, or by forward, is a package
this machine lacks: its target needs it, as a kernel needs CUDA, and is skipped with that
one-line reason. A module of the user's own (the target's top package, or a module found in
the project directory) that does not import is a broken module, an error as ever.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

_NOT_FOUND = re.compile(r"ModuleNotFoundError: No module named '(?P<name>[\w.]+)'")
_NO_NAME = re.compile(
    r"ImportError: cannot import name '(?P<attribute>\w+)' from '(?P<name>[\w.]+)'"
)
_IMPORTING = re.compile(r"importing '(?P<module>[\w.]+)' raised ")


def needed_package(message: str, target: str, project: Path | None = None) -> str | None:
    """`needs X (not installed)` (or `needs X (… has no name …)`) when `message` says an
    import of a package not of the user's failed; None otherwise. `target` is the target the
    message is about: its module's top package is the user's own."""
    line = message.strip().split("\n", 1)[0]
    importing = _IMPORTING.search(line)
    found = _NOT_FOUND.search(line) or _NO_NAME.search(line)
    if found is None:
        return None
    name = found["name"]
    package = name.split(".")[0]
    own = {_top(importing["module"])} if importing else set()
    own.add(_top(target.rpartition(":")[0]))
    if package in own or _in_project(package, project or Path.cwd()):
        return None
    if "attribute" in found.groupdict():
        return f"needs {package} (the one installed has no {found['attribute']!r})"
    if name != package and _installed(package):  # torch is here, torch._foo is not
        return f"needs {name} (not in the {package} installed here)"
    return f"needs {package} (not installed)"


def _installed(package: str) -> bool:
    """Whether a top-level package is found on sys.path (located, not imported)."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def _top(module: str) -> str:
    """The top package of a dotted module, or of a file path's module (its first part)."""
    if module.endswith(".py") or "/" in module:
        return Path(module).with_suffix("").parts[-1] if module else ""
    return module.split(".")[0]


def _in_project(package: str, project: Path) -> bool:
    return (project / package).is_dir() or (project / f"{package}.py").is_file()
