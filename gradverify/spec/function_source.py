"""The source a Function's verdict depends on, statement by statement: the cache's key.

A case is keyed on the top-level statements it can run, not on whole files, so that changing
one Function of a file of twelve reruns that Function's cases only. From the target's own
definition (its class, or an op's function and whatever registers on it: `register_autograd`,
`@op.register_fake`), every name it reads is followed, without importing anything, to the
statements that bind it: functions, classes and assignments (constants) of its module, and
of the project modules it imports from, transitively; an import it reads is keyed too.

Keyed besides, whatever runs when the modules are imported: a package's `__init__.py` whole,
and every statement of an imported module that is neither a definition nor an import (a call,
a block, an attribute assignment: they may change anything). When a name cannot be followed
for sure (a star import, `globals()`, `getattr` on a module, `torch.ops` looked up by name,
a `global` statement), None is returned and the key covers whole files (spec.source_files).
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gradverify.spec.identity import module_file_in
from gradverify.spec.module_reading import ModuleReading, names_read, read_module
from gradverify.spec.source_files import package_of, source_files
from gradverify.spec.targets import parse_target

_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True)
class FunctionSource:
    """The keyed statements: their text (what decides a verdict) and where each starts (a
    cached result that names a source line is stale once its statements move)."""

    texts: tuple[str, ...]
    layout: str


class _CannotTell(Exception):
    """A name that cannot be followed for sure: key whole files instead."""


def function_source(callables: Sequence[str], project: Path) -> FunctionSource | None:
    """The statements the `callables` (targets, references) depend on; None when they
    cannot be told statically (then key whole files)."""
    closure = _Closure(project.resolve())
    try:
        for target in callables:
            closure.add_target(target)
    except _CannotTell:
        return None
    keyed = sorted(closure.keyed.values())
    texts = tuple(f"{file}\0{text}" for file, _, text in keyed)
    layout = ";".join(f"{file}:{line}" for file, line, _ in keyed)
    return FunctionSource(texts, layout)


class _Closure:
    def __init__(self, project: Path) -> None:
        self.project = project
        self.keyed: dict[tuple[Path, int, int], tuple[str, int, str]] = {}
        self.names: set[tuple[Path, str]] = set()

    def add_target(self, target: str) -> None:
        form = parse_target(target)
        if form is None or form.module is None or form.attribute is None:
            raise _CannotTell(target)  # an op by name: registered who knows where
        reading = self._reading_of_target(form.module)
        self.add_name(reading, form.attribute.split(".")[0], required=True)
        for file in source_files(target, self.project):  # what importing it runs
            imported = self._reading(file)
            if file.name == "__init__.py":
                self.keyed[(file, 0, 0)] = (str(file), 1, imported.text)
            for statement in imported.effects:
                self.add_statement(imported, statement)

    def add_name(self, reading: ModuleReading, name: str, required: bool = False) -> None:
        if (reading.file, name) in self.names:
            return
        self.names.add((reading.file, name))
        statements = [*reading.bindings.get(name, ()), *reading.attached.get(name, ())]
        for statement in statements:
            self.add_statement(reading, statement)
        if name in reading.imports:
            self.add_import(reading, name, None)
        elif not statements and (required or reading.star_import) and name not in _BUILTINS:
            raise _CannotTell(name)  # not bound here: made at run time, or by the star

    def add_statement(self, reading: ModuleReading, statement: ast.stmt) -> None:
        where = (reading.file, statement.lineno, statement.col_offset)
        if where in self.keyed:
            return
        line, text = reading.source(statement)
        self.keyed[where] = (str(reading.file), line, text)
        read = names_read(statement)
        if read.dynamic:
            raise _CannotTell(text)
        for chain in read.chains:
            if chain[0] in reading.imports:
                self.add_import(reading, chain[0], chain[1:])
            else:
                self.add_name(reading, chain[0])
        for name in read.bare:
            self.add_name(reading, name)

    def add_import(self, reading: ModuleReading, name: str, attributes: list[str] | None) -> None:
        """The import binding `name`, and what `name.attributes` (None: `name` itself) is."""
        imported = reading.imports[name]
        line, text = reading.source(imported.statement)
        where = (reading.file, imported.statement.lineno, imported.statement.col_offset)
        self.keyed[where] = (str(reading.file), line, text)
        module = imported.module
        if imported.attribute is not None:
            submodule = f"{module}.{imported.attribute}"
            if module_file_in(submodule, self.project) is None:
                if (
                    module_file_in(module, self.project) is not None
                ):  # `from pkg.helpers import twice`
                    self.add_name(self._module(module), imported.attribute, required=True)
                return
            module = submodule
        if module_file_in(module, self.project) is None:
            return  # not the project's: its version is keyed (torch), its code is not ours
        rest = list(attributes or ())
        while rest and module_file_in(f"{module}.{rest[0]}", self.project) is not None:
            module = f"{module}.{rest.pop(0)}"
        if rest:
            self.add_name(self._module(module), rest[0], required=True)
        else:  # the module itself, passed along: all of it
            self._add_module(self._module(module))

    def _add_module(self, reading: ModuleReading) -> None:
        for name in [*reading.bindings, *reading.imports]:
            self.add_name(reading, name)
        for statement in reading.effects:
            self.add_statement(reading, statement)

    def _reading_of_target(self, module: str) -> ModuleReading:
        if module.endswith(".py") or "/" in module:
            return self._reading((self.project / module).resolve())
        return self._module(module)

    def _module(self, dotted: str) -> ModuleReading:
        file = module_file_in(dotted, self.project)
        if file is None:
            raise _CannotTell(dotted)
        return self._reading(file)

    def _reading(self, file: Path) -> ModuleReading:
        reading = read_module(file, package_of(file)) if file.is_file() else None
        if reading is None:
            raise _CannotTell(str(file))
        return reading
