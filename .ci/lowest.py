"""Print a pip constraints file pinning every direct dependency to the lowest version pyproject admits.

The lowest-versions job (`make test-lowest`) installs the project with these constraints, so
the range pyproject declares is tested at its bottom as `make test` tests it at its top.
torch is left out: these machines have one CPU build of it (the Makefile's), and any other
version from PyPI is a multi-GB CUDA build; both jobs run on that one.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import tomllib

HELD = {"torch"}  # installed by the Makefile, the same in both jobs
LOWER_BOUND = re.compile(r"^\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*(?:[^;]*?)>=\s*([0-9][^,;\s]*)")


def minima(pyproject: Path) -> list[str]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        requirements.extend(extra)
    pins = []
    for requirement in requirements:
        marker = requirement.partition(";")[2].strip()
        if marker and "python_version < '3.11'" in marker.replace('"', "'"):
            continue  # backports this Python does not install
        match = LOWER_BOUND.match(requirement)
        if match is None:
            sys.exit(f"{requirement!r} has no lower bound: give it one (>=) in pyproject.toml")
        name, version = match.group(1), match.group(3)
        if name.lower() not in HELD:
            pins.append(f"{name}=={version}")
    return pins


if __name__ == "__main__":
    root = Path(__file__).resolve().parent.parent
    print("\n".join(minima(root / "pyproject.toml")))
