"""Caps on what a spec file may ask of the YAML reader.

A real spec is a few kilobytes: a target, a few cases, perhaps a literal tensor. Each cap sits
far above that and far below what hurts: a pre-commit hook meets half-written and hostile files
(an alias bomb of 600 bytes expands to 10^8 nodes; 5,000 nested brackets exhaust the stack), and
must answer with a message, within a second, not with a hang or our traceback.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_SPEC_BYTES = 1024 * 1024
"""Files larger than this are refused before they are parsed."""

MAX_NODES = 50_000
"""Nodes in the document, counting every node an alias stands for each time it is used."""

MAX_DEPTH = 64
"""Nesting of mappings and sequences (a 10-d literal tensor inside a case is about 16)."""

MAX_SCALAR_CHARS = 64 * 1024
"""Characters in one key or value."""


@dataclass(frozen=True)
class Limit:
    """One cap, named as the message shows it."""

    name: str
    value: int
    unit: str

    def describe(self) -> str:
        return f"past the {self.name} limit of {self.value:,} {self.unit}"


SIZE = Limit("size", MAX_SPEC_BYTES, "bytes (1 MiB)")
NODES = Limit("node", MAX_NODES, "nodes")
ALIASES = Limit("alias expansion", MAX_NODES, "nodes")
DEPTH = Limit("depth", MAX_DEPTH, "levels")
SCALAR = Limit("scalar length", MAX_SCALAR_CHARS, "characters")
