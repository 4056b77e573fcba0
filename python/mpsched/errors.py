"""The exceptions mpsched raises."""

from __future__ import annotations


class MpschedError(Exception):
    """Everything mpsched raises derives from this."""


class ScenarioError(MpschedError, ValueError):
    """A scenario that failed to load or validate.

    Attributes:
        file: the file (or ``<builtin>/scenarios/...``, or ``from_toml``'s origin).
        field: the field, as ``link[2].rate``; empty for whole-file errors.
        message: what was expected, and what was found.
    """

    def __init__(self, text: str, file: str = "", field: str = "", message: str = "") -> None:
        super().__init__(text)
        self.file = file
        self.field = field
        self.message = message or text


class UsageError(MpschedError, ValueError):
    """A bad argument: an unknown backend or variant, a duration that is not a time."""


class RunError(MpschedError, RuntimeError):
    """A backend failed while running (a kernel without what the scenario needs, no root)."""
