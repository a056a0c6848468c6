"""Output formats: one module per format, each with `render(report, options) -> str`."""

from __future__ import annotations

from collections.abc import Callable

from gradverify.report import github, html, json_format, junit, sarif, text
from gradverify.report.options import RenderOptions
from gradverify.results import Report

Renderer = Callable[[Report, RenderOptions], str]

FORMATS: dict[str, Renderer] = {
    "text": text.render,
    "json": json_format.render,
    "junit": junit.render,
    "github": github.render,
    "sarif": sarif.render,
    "html": html.render,
}

__all__ = ["FORMATS", "RenderOptions", "Renderer"]
