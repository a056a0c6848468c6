"""How a file is named in a report: a path the user can open or find, never a bare file name.

A package can hold several files of one name (`lowlevel.py` three times in one wavelet
library), so a location must keep its directories.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path


def user_path(path: str, import_roots: Iterable[str] | None = None) -> str:
    """`path` as a report shows it, in POSIX form.

    Relative to the current directory (the project) when it lies below it; else relative to
    the import root it lies in (`site-packages/pkg/sub/lowlevel.py` -> `pkg/sub/lowlevel.py`),
    the most specific one when several contain it; else as given. `import_roots` defaults to
    sys.path.
    """
    given = Path(path)
    if not given.is_absolute():
        return given.as_posix()
    candidates = (given, given.resolve())
    for base in (Path.cwd(), Path.cwd().resolve()):
        for candidate in candidates:
            if candidate.is_relative_to(base):
                return candidate.relative_to(base).as_posix()
    roots = sys.path if import_roots is None else import_roots
    below = [
        candidate.relative_to(root)
        for root in _directories(roots)
        for candidate in candidates
        if candidate.is_relative_to(root)
    ]
    if below:
        return min(below, key=lambda relative: len(relative.parts)).as_posix()
    return given.as_posix()


def _directories(roots: Iterable[str]) -> list[Path]:
    """The absolute directories among import roots ('' and relative entries are the cwd, done)."""
    found = []
    for root in roots:
        if not root or not Path(root).is_absolute():
            continue
        found += [Path(root), Path(root).resolve()]
    return [d for d in found if d != Path(d.anchor)]  # "/" on sys.path would name nothing
