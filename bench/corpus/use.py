"""Run the usage functions of corpus modules: what `gradverify record` watches.

    python use.py dev.activations                  every use_* function of the module
    python use.py dev.activations use_soft_clip    only the ones named
    python use.py dev.activations dev.scans        several modules

Each usage function calls its Function the way its package would and runs a backward.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def usage_functions(module_name: str) -> dict[str, Callable[[], object]]:
    """The module's `use_*` functions, in the order they are defined."""
    module = importlib.import_module(module_name)
    return {
        name: value
        for name, value in vars(module).items()
        if name.startswith("use_") and callable(value)
    }


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    plan: list[tuple[str, list[str]]] = []
    for word in argv:
        if word.startswith("use_") and plan:
            plan[-1][1].append(word)
        else:
            plan.append((word, []))
    status = 0
    for module_name, wanted in plan:
        functions = usage_functions(module_name)
        for name in wanted or list(functions):
            if name not in functions:
                print(f"{module_name} has no usage function {name}", file=sys.stderr)
                return 2
            try:
                functions[name]()
            except Exception as error:  # one usage failing must not hide the others'
                print(
                    f"{module_name}.{name} raised {type(error).__name__}: {error}", file=sys.stderr
                )
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
