"""The forms a target is written in, read without importing anything.

    package.module:Attr           an attribute (a Function, a function, a custom op object)
    path/to/file.py:Attr          the same, from a file
    package.module:ns::name       the op `ns::name` that importing the module registers
    op:ns::name                   an op already registered (by torch, or a loaded library)

An op's qualified name may end in an overload, as torch spells it: `aten::add.Tensor`.
Specs, the result cache and pre-commit's selection read these forms; only gradverify.target.loading
imports the module and looks the op up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The prefix of an op that no module of the user's registers.
OP_PREFIX = "op"
# `module:ns::name[.overload]`: the op's qualified name is the part after the module.
_OP_TARGET = re.compile(r"(?P<module>.+?):(?P<op>[A-Za-z_]\w*::[A-Za-z_]\w*(?:\.\w+)?)")
FORMS = "`package.module:Attr`, `path/to/file.py:Attr`, `package.module:ns::op` or `op:ns::op`"


@dataclass(frozen=True)
class TargetForm:
    """A target as written, taken apart."""

    module: str | None  # the module or file to import; None for `op:ns::name`
    attribute: str | None  # the dotted attribute to resolve in it; None for an op
    op: str | None = None  # an op's qualified name, "ns::name" or "ns::name.overload"


def parse_target(spec: str) -> TargetForm | None:
    """`spec` taken apart, or None when it has none of the forms (see FORMS)."""
    match = _OP_TARGET.fullmatch(spec)
    if match is not None:
        module = match["module"]
        return TargetForm(None if module == OP_PREFIX else module, None, match["op"])
    if "::" in spec:  # an op name that lost its module, or a typo in one
        return None
    module, _, attribute = spec.rpartition(":")
    if not module or not attribute:
        return None
    return TargetForm(module, attribute)


def module_of(spec: str) -> str | None:
    """The module (or file) whose code a target is: None for an op given as `op:ns::name`,
    and for anything that is not a target."""
    form = parse_target(spec)
    return form.module if form is not None else None


def form_problem(spec: str) -> str | None:
    """What is wrong with how `spec` is written, in a phrase; None if it is well formed."""
    if parse_target(spec) is not None:
        return None
    if "::" in spec:
        return (
            "an op is written `package.module:ns::name` (after the module that registers it) "
            "or `op:ns::name` (an op already registered)"
        )
    return f"expected {FORMS}"
