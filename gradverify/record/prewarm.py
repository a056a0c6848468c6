"""A head start while the recorded command runs: once a call appears that no spec holds yet,
import what writing its case needs (torch, torch._dynamo for a custom op, the modules that
shrink and add cases), so that those seconds overlap the command instead of following it.
A run whose every signature a spec holds already imports nothing."""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Callable
from pathlib import Path

from gradverify.record.records import RecordedCall, parse_call

POLL = 0.25  # seconds between looks at the records file
MODULES = ("torch", "gradverify.record.shrink", "gradverify.record.variants")
OP_MODULES = ("torch._dynamo",)  # what torch imports on a custom op's first call


class Prewarm(threading.Thread):
    """Watches `records` until `stop` is set; imports once `is_new` says a call is new."""

    def __init__(self, records: Path, is_new: Callable[[RecordedCall], bool]) -> None:
        super().__init__(name="gradverify-record-prewarm", daemon=True)
        self.records = records
        self.is_new = is_new
        self.stop = threading.Event()
        self.found: RecordedCall | None = None  # the first new call, once seen

    def run(self) -> None:
        with contextlib.suppress(Exception):  # a head start only: the specs import it anyway
            call = self.found = self._first_new()
            if call is not None:
                for name in (*MODULES, *(OP_MODULES if "::" in call.target else ())):
                    importlib.import_module(name)

    def _first_new(self) -> RecordedCall | None:
        offset = 0
        while not self.stop.wait(POLL):
            with self.records.open("rb") as file:
                file.seek(offset)
                chunk = file.read()
            complete = chunk.rfind(b"\n") + 1  # a line still being written waits
            offset += complete
            for line in chunk[:complete].splitlines():
                call = parse_call(line)
                if call is not None and self.is_new(call):
                    return call
        return None
