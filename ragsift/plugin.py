"""The base of every plugin: settings validated by the plugin's own pydantic model.

Constructors only store settings. Anything heavy (model weights, tokenizers) loads on first use
in ``warm_up()``, so every plugin can be built and checked on a CPU-only machine without weights.
"""

from __future__ import annotations

import types
from abc import ABC
from typing import Annotated, Any, ClassVar, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from ragsift.errors import ConfigError

__all__ = ["Params", "Plugin", "format_validation_error", "accepts_bool", "reject_bool"]


def accepts_bool(annotation: Any) -> bool:
    """Whether a field of this type means to accept ``true``/``false`` (``bool``, ``Any``, a
    union or literal holding one); pydantic would otherwise read ``k = true`` as ``k = 1``."""
    if annotation is bool or annotation is Any or annotation is object:
        return True
    origin = get_origin(annotation)
    if origin is Literal:
        return any(isinstance(arg, bool) for arg in get_args(annotation))
    if origin in (Union, types.UnionType, Annotated):
        return any(accepts_bool(arg) for arg in get_args(annotation))
    return False


def reject_bool(model: type[BaseModel], value: Any, info: ValidationInfo) -> Any:
    """A ``mode="before"`` field check: ``true``/``false`` where a number is expected is an error."""
    if isinstance(value, bool) and info.field_name is not None:
        field = model.model_fields.get(info.field_name)
        if field is not None and not accepts_bool(field.annotation):
            raise ValueError(f"expects a number, not {'true' if value else 'false'}")
    return value


class Params(BaseModel):
    """Base of every plugin's params: unknown keys are rejected, values validated on assignment,
    and ``true``/``false`` is never taken for a number."""

    model_config = ConfigDict(extra="forbid", frozen=True, protected_namespaces=())

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        return reject_bool(cls, value, info)


def _loc(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc) or "params"


def format_validation_error(owner: str, error: ValidationError, known: list[str] | None = None) -> str:
    """One readable message for all problems: "Owner: 'key' must ...; got X."."""
    problems = []
    for item in error.errors():
        loc = _loc(item["loc"])
        if item["type"] == "extra_forbidden":
            hint = f" (known: {', '.join(known)})" if known else ""
            problems.append(f"unknown parameter '{loc}'{hint}")
        elif item["type"] == "missing":
            problems.append(f"'{loc}' is required")
        else:
            msg = item["msg"]
            if msg.startswith("Value error, "):
                msg = msg[len("Value error, ") :]
            problems.append(f"'{loc}': {msg}; got {item.get('input')!r}")
    return f"{owner}: " + "; ".join(problems) + "."


class Plugin(ABC):  # noqa: B024 - stage bases add the abstract methods
    """A configurable component of one stage.

    Subclasses set ``Params`` to a :class:`Params` model; ``__init__`` validates keyword
    arguments against it and raises :class:`ConfigError` with one readable message.
    """

    Params: ClassVar[type[Params]] = Params
    #: True when the plugin loads model weights on first use (conformance checks then skip the
    #: parts that need them)
    needs_model: ClassVar[bool] = False
    #: params the conformance checks build the plugin with when it has required params
    conformance_params: ClassVar[dict[str, Any]] = {}
    #: the name under which the registry created this instance (set by the registry)
    registered_name: str | None = None

    def __init__(self, **params: Any) -> None:
        self.params = self.validate_params(params)

    @classmethod
    def validate_params(cls, params: dict[str, Any]) -> Any:
        try:
            return cls.Params(**params)
        except ValidationError as exc:
            known = sorted(cls.Params.model_fields)
            raise ConfigError(format_validation_error(cls.__name__, exc, known)) from None

    def config(self) -> dict[str, Any]:
        """The params that rebuild this plugin (JSON-compatible)."""
        return self.params.model_dump(mode="json")

    def warm_up(self) -> None:  # noqa: B027 - optional hook, empty by default
        """Load heavy resources. Called on first use; safe to call again."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config()!r})"
