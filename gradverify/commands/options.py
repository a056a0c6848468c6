"""The choices the command line offers, named once for the CLI and the commands."""

from __future__ import annotations

from enum import Enum


class OutputFormat(str, Enum):
    """--format: one per renderer in gradverify.report."""

    text = "text"
    json = "json"
    junit = "junit"
    github = "github"
    sarif = "sarif"
    html = "html"


class Mode(str, Enum):
    """--mode: how gradcheck-like checks build Jacobians."""

    full = "full"
    randomized = "randomized"
    auto = "auto"


FORMAT_NAMES = [choice.value for choice in OutputFormat]
