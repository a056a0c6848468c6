"""Project defaults from `[tool.gradverify]` in the nearest `pyproject.toml`.

Precedence, most specific first: a command-line flag, then a key written in the spec, then
this configuration, then gradverify's built-in default. Reading it never imports torch.
"""

from __future__ import annotations

import fnmatch
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gradverify.errors import GradverifyError, SpecIssue, UsageError
from gradverify.spec.config_file import DEFAULT_SPECS, SECTION, find_pyproject
from gradverify.spec.config_file import display as _display
from gradverify.spec.load import SpecEntry
from gradverify.spec.models import CHECK_IDS, CONFIGURED_CHECKS, CheckId, Tolerance, known_device
from gradverify.spec.suggest import did_you_mean

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


class Settings(BaseModel):
    """The keys of `[tool.gradverify]`; None means "not set here"."""

    # Strict: TOML values are typed, so `jobs = "4"` or `timeout = true` is a mistake.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    specs: list[str] = Field(default_factory=lambda: list(DEFAULT_SPECS), min_length=1)
    tolerance: Tolerance | None = None
    mode: Literal["full", "randomized", "auto"] | None = None
    timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    jobs: int | None = Field(default=None, ge=1)
    format: str | None = None
    extra_checks: list[CheckId] | None = None  # besides the default ones, e.g. ["compile"]
    explore: int | None = Field(default=None, ge=0, le=10_000)  # further draws per case
    device: str | None = None  # of the tensor inputs whose spec names no device (cpu, cuda, cuda:N)
    # Targets whose backward is a surrogate by the package's convention, as glob patterns of
    # their dotted path ("pkg.lie.*", "pkg.spikes.Heaviside"): `gradient: surrogate` where
    # their spec does not say `gradient:` itself.
    surrogates: list[str] | None = None

    @field_validator("device")
    @classmethod
    def _known_device(cls, device: str | None) -> str | None:
        return None if device is None else known_device(device)


@dataclass(frozen=True)
class Config:
    """The settings in force, and the file they came from (None: built-in defaults)."""

    settings: Settings
    file: Path | None = None

    @property
    def root(self) -> Path:
        """The directory spec paths are relative to: the config file's, or the cwd."""
        return self.file.parent if self.file is not None else Path.cwd()

    @property
    def spec_paths(self) -> list[str]:
        """The configured spec paths, as the user would type them from the cwd."""
        return [_display(self.root / path) for path in self.settings.specs]

    @property
    def note(self) -> str | None:
        """The line the report starts with, saying which configuration was used."""
        return (
            None if self.file is None else f"configuration: {_display(self.file)} [tool.gradverify]"
        )


class ConfigError(GradverifyError):
    """A `[tool.gradverify]` that cannot be read or does not validate."""

    def __init__(self, issues: list[SpecIssue]) -> None:
        self.issues = issues
        super().__init__(self.render())

    def render(self) -> str:
        return "\n".join(issue.render() for issue in self.issues)


def load_config(start: Path | None = None, formats: Sequence[str] = ()) -> Config:
    """The configuration for a run from `start`; ConfigError names the file, line and key.

    `formats` are the report formats `format` may name (not checked when empty).
    """
    file = find_pyproject(start)
    if file is None:
        return Config(Settings())
    text = _read(file)
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        line, column = _toml_position(str(error))
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(error))
        raise ConfigError(
            [SpecIssue(_display(file), line, column, "", f"invalid TOML: {message}")]
        ) from None
    except RecursionError:
        # tomllib recurses once per nested array or inline table
        message = "invalid TOML: arrays or inline tables nested too deeply to read"
        raise ConfigError([SpecIssue(_display(file), None, None, "", message)]) from None
    section = document.get("tool", {}).get("gradverify")
    if section is None:
        return Config(Settings())
    if not isinstance(section, dict):
        raise ConfigError([_issue(file, text, (), "[tool.gradverify] must be a table")])
    try:
        settings = Settings.model_validate(section)
    except ValidationError as error:
        raise ConfigError(
            [_validation_issue(file, text, item) for item in error.errors()]
        ) from None
    if settings.format is not None and formats and settings.format not in formats:
        message = (
            f"unknown format {settings.format!r}{did_you_mean(settings.format, formats)}; "
            f"choose one of {', '.join(formats)}"
        )
        raise ConfigError([_issue(file, text, ("format",), message)])
    return Config(settings, file)


def with_defaults(entries: Sequence[SpecEntry], config: Config) -> list[SpecEntry]:
    """Entries with the configured tolerance, mode, timeout, explore and extra checks where their spec
    sets none (a spec's `checks:` sets its checks), and `gradient: surrogate` where a
    `surrogates` pattern matches a target whose spec does not say `gradient:`.

    A spec's own `tolerance` keeps every key it writes; the others come from the config.
    """
    settings = config.settings
    updated = []
    for entry in entries:
        spec = entry.spec
        written = spec.model_fields_set
        update: dict[str, Any] = {}
        if settings.tolerance is not None:
            own = {key: getattr(spec.tolerance, key) for key in spec.tolerance.model_fields_set}
            own = own if "tolerance" in written else {}
            update["tolerance"] = settings.tolerance.model_copy(update=own)
        if settings.mode is not None and "mode" not in written:
            update["mode"] = settings.mode
        if settings.timeout is not None and "timeout" not in written:
            update["timeout"] = settings.timeout
        if settings.explore is not None and "explore" not in written:
            update["explore"] = settings.explore
        if settings.extra_checks and not written & {"checks", "extra_checks"}:
            update["extra_checks"] = list(settings.extra_checks)
        conventional = settings.surrogates and conventional_surrogate(
            spec.target, settings.surrogates
        )
        if conventional and "gradient" not in written:
            update["gradient"] = "surrogate"
        spec = spec.model_copy(update=update) if update else spec
        if settings.device is not None:
            spec = spec.by_default_on(settings.device)
        updated.append(replace(entry, spec=spec) if spec is not entry.spec else entry)
    return updated


def conventional_surrogate(target: str | None, patterns: Sequence[str]) -> bool:
    """Whether a `surrogates` pattern matches `target` (`pkg.mod:Fn` or `path/file.py:Fn`),
    written as its dotted path (`pkg.mod.Fn`, `path.file.Fn`) or as it is."""
    if not target:
        return False
    module, _, name = target.partition(":")
    dotted = module.removesuffix(".py").replace("/", ".").replace("\\", ".")
    forms = {target, f"{dotted}.{name}" if name else dotted}
    return any(fnmatch.fnmatchcase(form, pattern) for form in forms for pattern in patterns)


def with_extra_checks(entries: Sequence[SpecEntry], checks: Sequence[str]) -> list[SpecEntry]:
    """Entries that also run `checks` (`--extra-check`): a flag, so every spec, those that
    list their `checks:` too. UsageError for an id that is not a check."""
    for check in checks:
        if check not in CHECK_IDS:
            raise UsageError(
                f"--extra-check: no check {check!r}{did_you_mean(check, CHECK_IDS)}; "
                f"choose one of {', '.join(CHECK_IDS)}"
            )
    if not checks:
        return list(entries)
    updated = []
    for entry in entries:
        spec = entry.spec
        configured = [  # `reference` runs only with its key, asked for or not
            c for c in checks if c not in CONFIGURED_CHECKS or getattr(spec, CONFIGURED_CHECKS[c])
        ]
        if spec.checks is not None:
            update = {"checks": [*spec.checks, *(c for c in configured if c not in spec.checks)]}
        else:
            added = [c for c in configured if c not in spec.extra_checks]
            update = {"extra_checks": [*spec.extra_checks, *added]}
        updated.append(replace(entry, spec=spec.model_copy(update=update)))
    return updated


def _read(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(
            [SpecIssue(_display(file), None, None, "", f"cannot read: {error}")]
        ) from None


def _validation_issue(file: Path, text: str, error: Any) -> SpecIssue:
    path = tuple(str(part) for part in error["loc"] if not isinstance(part, int))
    kind = error["type"]
    if kind == "extra_forbidden":
        key = path[-1]
        valid = set(
            Tolerance.model_fields if path[:-1] == ("tolerance",) else Settings.model_fields
        )
        message = (
            f"unknown key {key!r}{did_you_mean(key, valid)}; valid keys: {', '.join(sorted(valid))}"
        )
    elif kind == "literal_error" and path[:1] == ("extra_checks",):
        message = f"{error['msg']}{did_you_mean(str(error['input']), CHECK_IDS)}"
    else:
        message = str(error["msg"]).removeprefix("Value error, ")
    return _issue(file, text, path, message)


def _issue(file: Path, text: str, path: tuple[str, ...], message: str) -> SpecIssue:
    key_path = ".".join((*SECTION, *path))
    return SpecIssue(_display(file), _line_of(text, path), None, key_path, message)


def _line_of(text: str, path: tuple[str, ...]) -> int | None:
    """The line that sets `path` under [tool.gradverify] (a key or a sub-table), if found.

    tomllib keeps no positions, so this reads the lines: enough for the flat tables that
    configurations are. The deepest match wins; failing any, the section's header.
    """
    inner: tuple[str, ...] | None = None  # the table being read, below [tool.gradverify]
    section_line = None
    best: tuple[int, int] | None = None  # (how many keys of `path` matched, line)
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        header = re.fullmatch(r"\[\s*([^\[\]]+?)\s*\]", line)
        key = re.match(r"([\w\-\"'. ]+?)\s*=", line)
        if line.startswith("["):  # a table header; an array of tables is not ours
            table = _dotted(header.group(1)) if header else ()
            inner = table[len(SECTION) :] if table[: len(SECTION)] == SECTION else None
            if table == SECTION:
                section_line = number
            names = inner
        elif key and inner is not None:
            names = (*inner, *_dotted(key.group(1)))
        else:
            continue
        if names and path[: len(names)] == names and (best is None or len(names) > best[0]):
            best = (len(names), number)
    return best[1] if best else section_line


def _dotted(key: str) -> tuple[str, ...]:
    return tuple(part.strip().strip("\"'") for part in key.split("."))


def _toml_position(message: str) -> tuple[int | None, int | None]:
    found = re.search(r"at line (\d+), column (\d+)", message)
    return (int(found.group(1)), int(found.group(2))) if found else (None, None)
