"""Read spec files into validated FunctionSpecs, or SpecErrors naming file, line and key."""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from gradverify.errors import SpecError, SpecIssue
from gradverify.spec import limits
from gradverify.spec.messages import plain_message
from gradverify.spec.models import CHECK_IDS, INPUT_TAGS, FunctionSpec, MultiSpec
from gradverify.spec.suggest import did_you_mean
from gradverify.spec.yamlnodes import KeyPath, LimitError, LoadedYaml, load_yaml


@dataclass(frozen=True)
class SpecEntry:
    """One Function's spec and where it was written."""

    spec: FunctionSpec
    file: str | None  # None for a spec inferred from a signature
    line: int | None = None
    case_lines: dict[str, int] = field(default_factory=dict)


def load_spec_file(path: str | Path) -> list[SpecEntry]:
    """Load and validate one spec file (one Function, or several under `functions:`)."""
    file = str(path)
    return parse_spec(_read(file), file)


def _read(file: str) -> str:
    """The text of a spec file; one larger than any real spec is refused unread."""
    try:
        with open(file, "rb") as stream:
            # Reading one byte past the cap also stops pipes and devices that never end.
            content = stream.read(limits.MAX_SPEC_BYTES + 1)
    except OSError as exc:
        raise SpecError(
            [SpecIssue(file, None, None, "", f"cannot read spec: {exc.strerror}")]
        ) from None
    if len(content) > limits.MAX_SPEC_BYTES:
        message = f"the spec is too large, refused unread: {limits.SIZE.describe()}"
        raise SpecError([SpecIssue(file, None, None, "", message)])
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = content.count(b"\n", 0, exc.start) + 1
        column = exc.start - (content.rfind(b"\n", 0, exc.start) + 1) + 1
        message = f"not UTF-8 text: byte 0x{content[exc.start]:02x} cannot be decoded"
        raise SpecError([SpecIssue(file, line, column, "", message)]) from None


def parse_spec(text: str, file: str) -> list[SpecEntry]:
    """Validate spec text; `file` names it in messages."""
    try:
        loaded = load_yaml(text)
    except LimitError as exc:
        line, column = _mark_position(exc.problem_mark)
        message = f"{exc.problem}: {exc.limit.describe()}"
        raise SpecError([SpecIssue(file, line, column, "", message)]) from None
    except yaml.MarkedYAMLError as exc:
        raise SpecError([_syntax_issue(exc, text, file)]) from None
    except yaml.YAMLError as exc:
        raise SpecError([SpecIssue(file, None, None, "", f"invalid YAML: {exc}")]) from None

    data = loaded.data
    if not isinstance(data, dict):
        found = "an empty file" if data is None else f"a {type(data).__name__}"
        raise SpecError(
            [
                SpecIssue(
                    file,
                    1,
                    1,
                    "",
                    f"a spec must be a mapping with `target` and `cases`, found {found}",
                )
            ]
        )
    if "functions" in data:
        multi = _validate(MultiSpec, data, loaded, file)
        return [
            _entry(function, file, loaded, ("functions", index))
            for index, function in enumerate(multi.functions)
        ]
    return [_entry(_validate(FunctionSpec, data, loaded, file), file, loaded, ())]


def _mark_position(mark: yaml.Mark | None) -> tuple[int | None, int | None]:
    return (mark.line + 1, mark.column + 1) if mark else (None, None)


# What the reader was inside when it gave up, for the openers a document can leave unclosed.
_OPENERS = {"flow sequence": "`[`", "flow mapping": "`{`", "quoted scalar": "quote"}


def _syntax_issue(exc: yaml.MarkedYAMLError, text: str, file: str) -> SpecIssue:
    """A YAML syntax error placed where the author must look, in words of our own.

    A tab is named as a tab, and an unclosed bracket or quote is placed at its opening, not
    at the line where the reader noticed (often the next case, a line or more further on).
    """
    problem_mark = exc.problem_mark or exc.context_mark
    tab = _tab_near(text, problem_mark)
    if tab is not None:
        message = "invalid YAML: a tab character; YAML indents with spaces, never tabs"
        return SpecIssue(file, tab[0], tab[1], "", message)
    context = exc.context or ""
    for kind, opener in _OPENERS.items():
        if kind in context and exc.context_mark is not None and problem_mark is not None:
            line, column = _mark_position(exc.context_mark)
            noticed = f"line {problem_mark.line + 1}, column {problem_mark.column + 1}"
            message = (
                f"invalid YAML: the {opener} opened here is never closed "
                f"(the reader gave up at {noticed})"
            )
            return SpecIssue(file, line, column, "", message)
    line, column = _mark_position(problem_mark)
    problem = " ".join(filter(None, [exc.context, exc.problem]))
    return SpecIssue(file, line, column, "", f"invalid YAML: {problem}")


def _tab_near(text: str, mark: yaml.Mark | None) -> tuple[int, int] | None:
    """(line, column) of a tab in the indentation of, or at, the line the reader stopped on."""
    if mark is None:
        return None
    lines = text.split("\n")
    if mark.line >= len(lines):
        return None
    line = lines[mark.line]
    indentation = line[: len(line) - len(line.lstrip(" \t"))]
    if "\t" in indentation:
        return mark.line + 1, indentation.index("\t") + 1
    if line[mark.column : mark.column + 1] == "\t":
        return mark.line + 1, mark.column + 1
    return None


def _entry(spec: FunctionSpec, file: str, loaded: LoadedYaml, path: KeyPath) -> SpecEntry:
    position = loaded.position_of(path)
    case_lines = {}
    for index, case in enumerate(spec.cases):
        case_position = loaded.position_of((*path, "cases", index))
        if case_position is not None:
            case_lines[case.name] = case_position.line
    return SpecEntry(spec, file, position.line if position else None, case_lines)


_M = typing.TypeVar("_M", bound=BaseModel)


def _validate(model: type[_M], data: dict[str, Any], loaded: LoadedYaml, file: str) -> _M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        issues = [_issue(model, error, loaded, file) for error in exc.errors()]
        raise SpecError(issues) from None


def _issue(model: type[BaseModel], error: Any, loaded: LoadedYaml, file: str) -> SpecIssue:
    path = _yaml_path(error["loc"])
    position = loaded.position_of(path)
    return SpecIssue(
        file=file,
        line=position.line if position else None,
        column=position.column if position else None,
        key_path=format_key_path(path),
        message=_message(model, error, path),
    )


def _yaml_path(loc: tuple[Any, ...]) -> KeyPath:
    """Drop the union tags pydantic adds to locations (e.g. inputs.0.tensor.shape)."""
    path: list[str | int] = []
    for part in loc:
        after_input = len(path) >= 2 and path[-2] == "inputs" and isinstance(path[-1], int)
        if after_input and part in INPUT_TAGS:
            continue
        path.append(part)
    return tuple(path)


def format_key_path(path: KeyPath) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _message(model: type[BaseModel], error: Any, path: KeyPath) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        key = str(path[-1])
        valid = _valid_keys(model, path[:-1])
        listing = f"; valid keys: {', '.join(sorted(valid))}" if valid else ""
        return f"unknown key {key!r}{did_you_mean(key, valid)}{listing}"
    if kind == "missing":
        return f"missing required key {path[-1]!r}"
    if kind == "literal_error" and isinstance(error.get("input"), str):
        choices = CHECK_IDS if {"checks", "extra_checks"} & set(path) else ()
        return f"{plain_message(error, path)}{did_you_mean(error['input'], choices)}"
    return plain_message(error, path)


def _valid_keys(root: type[BaseModel], path: KeyPath) -> set[str]:
    """Field names of the model found at `path` under `root` (empty when unknown)."""
    annotation: Any = root
    for part in path:
        model = _model_in(annotation, part)
        if model is None:
            return set()
        annotation = model if isinstance(part, int) else model.model_fields[str(part)].annotation
        if isinstance(part, int):
            annotation = _list_item(annotation)
    model = _model_in(annotation, None)
    return set(model.model_fields) if model else set()


def _model_in(annotation: Any, part: str | int | None) -> Any:
    """The BaseModel inside `annotation` (through Optional, list, Annotated, unions)."""
    if isinstance(part, int):
        return annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation if part is None or str(part) in annotation.model_fields else None
    for arg in typing.get_args(annotation):
        found = _model_in(arg, part)
        if found is not None:
            return found
    return None


def _list_item(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin is list:
        return typing.get_args(annotation)[0]
    if origin in (typing.Union, types.UnionType, typing.Annotated):
        for arg in typing.get_args(annotation):
            item = _list_item(arg)
            if item is not None:
                return item
    return None
