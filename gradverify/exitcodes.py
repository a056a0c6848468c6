"""Process exit codes: a public contract that CI scripts act on."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0  # nothing failed
    FAILED = 1  # at least one check failed
    USAGE = 2  # bad command line, spec or target
    INTERNAL = 3  # a bug in gradverify itself
    NO_TESTS = 5  # targets were asked for and nothing was checked (pytest's "no tests collected")
    INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT
