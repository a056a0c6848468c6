"""`python -m gradverify`."""

from __future__ import annotations

from gradverify.cli import main

main()
