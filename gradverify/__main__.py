"""`python -m gradverify`."""

from __future__ import annotations

from gradverify.cli import main

# Guarded: worker processes are spawned, and a spawned child imports the parent's main module.
if __name__ == "__main__":
    main()
