"""`python -m gradverify`, and the console script.

`--version` and a pre-commit run that no changed file concerns are answered before the CLI
is imported (gradverify.quick): typer, rich and pydantic cost a third of a second. Else
Ctrl-C is owned before the CLI's own imports (typer, click) take their tenth of a second: a
Ctrl-C during them is then an exit 130, not a traceback from an import.
"""

from __future__ import annotations

import sys


def main() -> None:
    """The `gradverify` command."""
    from gradverify.run import interrupts

    interrupts.install()
    from gradverify import quick

    code = quick.answer(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from gradverify import cli

    cli.main()


# Guarded: worker processes are spawned, and a spawned child imports the parent's main module.
if __name__ == "__main__":
    main()
