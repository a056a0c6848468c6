"""Errors meant for users: each carries what a person needs to act on it."""

from __future__ import annotations

from dataclasses import dataclass


class GradverifyError(Exception):
    """An error caused by the user's input, shown as a message without our traceback."""

    def render(self) -> str:
        return str(self)


@dataclass(frozen=True)
class SpecIssue:
    """One problem in a spec file, located by line, column and key path."""

    file: str
    line: int | None
    column: int | None
    key_path: str
    message: str

    def render(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        key = f" {self.key_path}:" if self.key_path else ""
        return f"{where}:{key} {self.message}"


class SpecError(GradverifyError):
    """A spec file that cannot be read or does not validate."""

    def __init__(self, issues: list[SpecIssue]) -> None:
        self.issues = issues
        super().__init__(self.render())

    def render(self) -> str:
        return "\n".join(issue.render() for issue in self.issues)


class TargetError(GradverifyError):
    """A `module:Attr` target that cannot be loaded."""

    def __init__(self, target: str, message: str, details: str = "") -> None:
        self.target = target
        self.message = message
        self.details = details
        super().__init__(self.render())

    def render(self) -> str:
        text = f"cannot load target '{self.target}': {self.message}"
        return f"{text}\n{self.details}" if self.details else text


class UsageError(GradverifyError):
    """A command line that does not make sense."""
