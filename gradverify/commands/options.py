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


def checked_device(device: str) -> str:
    """--device: `device` if this machine can run cases there, or has no device of its kind at
    all (each case is then skipped, saying so); ValueError for an unknown kind, or for a device
    numbered beyond this machine's (`cuda:3` with one GPU), naming the devices it has."""
    from gradverify.spec.models import known_device

    known_device(device)
    if device.split(":", 1)[0] in ("cpu", "meta"):
        return device  # no torch import: the CPU needs no asking
    from gradverify.inputs import DeviceUnavailable, NoSuchDevice, require_device

    try:
        require_device(device)
    except DeviceUnavailable:
        pass  # its cases are skipped, each one saying why
    except NoSuchDevice as missing:
        raise ValueError(str(missing)) from None
    return device
