"""Exceptions raised by ragsift. Every message says what was expected, what came, and how to fix it."""

from __future__ import annotations

__all__ = [
    "RagsiftError",
    "ConfigError",
    "UnknownPluginError",
    "DuplicatePluginError",
    "DataFormatError",
    "PromptTooLongError",
    "MissingDependencyError",
    "OutputError",
    "PluginContractError",
    "UsageError",
]


class RagsiftError(Exception):
    """Base class of all ragsift errors."""


class ConfigError(RagsiftError, ValueError):
    """A config or a plugin's params are invalid."""


class UnknownPluginError(RagsiftError, KeyError):
    """No plugin of that stage has that name."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class DuplicatePluginError(RagsiftError):
    """Two sources registered the same name for one stage."""


class DataFormatError(RagsiftError, ValueError):
    """An input file is malformed; the message names the file and the line or record."""

    def __init__(self, path: object, location: str | int | None, problem: str) -> None:
        self.path = str(path)
        self.location = location
        self.problem = problem
        where = self.path
        if isinstance(location, int):
            where += f", line {location}"
        elif location:
            where += f", {location}"
        super().__init__(f"{where}: {problem}")


class PromptTooLongError(RagsiftError, ValueError):
    """A prompt exceeds the model's budget and the overflow policy is 'error'."""


class MissingDependencyError(RagsiftError, ImportError):
    """An optional dependency is not installed; the message names the install command."""


class OutputError(RagsiftError):
    """An output cannot be written (it is the input, a folder, exists, or the disk refused)."""


class PluginContractError(RagsiftError, RuntimeError):
    """A plugin broke its stage's contract (wrong number of scores, invalid indices, ...);
    the message names the plugin."""


class UsageError(RagsiftError, TypeError):
    """A library function was called with a value of the wrong type."""
