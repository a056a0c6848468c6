"""`python -m gradverify`, and the console script.

Ctrl-C is owned before the CLI's own imports (typer, click) take their tenth of a second: a
Ctrl-C during them is then an exit 130, not a traceback from an import.
"""

from __future__ import annotations


def main() -> None:
    """The `gradverify` command."""
    from gradverify.run import interrupts

    interrupts.install()
    from gradverify import cli

    cli.main()


# Guarded: worker processes are spawned, and a spawned child imports the parent's main module.
if __name__ == "__main__":
    main()
