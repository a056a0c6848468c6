"""pydantic's validation errors said the way gradverify says everything else.

pydantic words an error for a developer of the model ("List should have at least 1 item after
validation, not 0"); a spec's author wants the key and what to write there ("`cases:` is empty:
give at least one case"). Each error type pydantic raises on a spec gets a sentence here; an
unknown type falls back to pydantic's own words rather than to nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gradverify.spec.yamlnodes import KeyPath


# What one item of a list under a key is called, for "give at least one case".
_ITEM_NAMES = {
    "cases": "case",
    "inputs": "input",
    "functions": "function",
    "shape": "extent",
    "checks": "check id",
    "extra_checks": "check id",
}


def plain_message(error: Any, path: KeyPath) -> str:
    """The sentence for one pydantic error found at `path` of a spec."""
    writer = _WRITERS.get(str(error["type"]))
    if writer is None:
        return str(error["msg"]).removeprefix("Value error, ")
    return writer(_Error(error, path))


class _Error:
    """One pydantic error with the words its sentence needs."""

    def __init__(self, error: Any, path: KeyPath) -> None:
        self.context: dict[str, Any] = dict(error.get("ctx") or {})
        self.input = error.get("input")
        named = [part for part in path if isinstance(part, str)]
        self.key = named[-1] if named else "the spec"
        self.is_item = bool(path) and isinstance(path[-1], int)

    @property
    def subject(self) -> str:
        """`key:` for the key itself, or "an item of `key:`" for one of its list items."""
        return f"an item of `{self.key}:`" if self.is_item else f"`{self.key}:`"

    @property
    def found(self) -> str:
        return f"found {_kind(self.input)}"


def _kind(value: Any) -> str:
    """A value as an author wrote it: `a list`, `the text 'abc'`, `the number 2.5`."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__}"


def _too_short(error: _Error) -> str:
    minimum = int(error.context.get("min_length", 1))
    item = _ITEM_NAMES.get(error.key, "item")
    if not error.context.get("actual_length"):
        wanted = f"one {item}" if minimum == 1 else f"{minimum} {item}s"
        return f"{error.subject} is empty: give at least {wanted}"
    return f"{error.subject} has {error.context['actual_length']}, give at least {minimum}"


def _too_long(error: _Error) -> str:
    maximum = error.context.get("max_length")
    return f"{error.subject} has {error.context.get('actual_length')}, at most {maximum} allowed"


def _bound(word: str, context_key: str) -> Callable[[_Error], str]:
    def write(error: _Error) -> str:
        return f"{error.subject} must be {word} {error.context.get(context_key)}, found {error.input!r}"

    return write


def _expected(what: str) -> Callable[[_Error], str]:
    def write(error: _Error) -> str:
        return f"{error.subject} must be {what}, {error.found}"

    return write


def _literal(error: _Error) -> str:
    return f"{error.subject} must be one of {error.context.get('expected')}, {error.found}"


_WRITERS: dict[str, Callable[[_Error], str]] = {
    "too_short": _too_short,
    "too_long": _too_long,
    "greater_than": _bound("greater than", "gt"),
    "greater_than_equal": _bound("at least", "ge"),
    "less_than": _bound("less than", "lt"),
    "less_than_equal": _bound("at most", "le"),
    "int_type": _expected("a whole number"),
    "int_parsing": _expected("a whole number"),
    "int_from_float": _expected("a whole number"),
    "float_type": _expected("a number"),
    "float_parsing": _expected("a number"),
    "finite_number": _expected("a finite number"),
    "bool_type": _expected("true or false"),
    "bool_parsing": _expected("true or false"),
    "string_type": _expected("text"),
    "list_type": _expected("a list"),
    "tuple_type": _expected("a list"),
    "dict_type": _expected("a mapping (key: value lines)"),
    "model_type": _expected("a mapping (key: value lines)"),
    "model_attributes_type": _expected("a mapping (key: value lines)"),
    "literal_error": _literal,
    "enum": _literal,
    "none_required": _expected("left out"),
}
