"""The base of every plugin: settings validated by the plugin's own pydantic model.

Constructors only store settings. Anything heavy (model weights, tokenizers) loads on first use
in ``warm_up()``, so every plugin can be built and checked on a CPU-only machine without weights.
"""

from __future__ import annotations

import types
from abc import ABC
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, Union, get_args, get_origin

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, ValidationError, ValidationInfo, field_validator

from ragsift.errors import ConfigError

__all__ = [
    "Params", "Plugin", "PluginSpec", "as_spec", "merge_spec",
    "format_validation_error", "accepts_bool", "reject_bool", "OptionalName", "nested_plugins", "warm_up_all",
]


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


def _blank_as_none(value: str | None) -> str | None:
    return value if value and value.strip() else None


#: an optional file or name where "" (or blanks) means none: a config's way to leave it out, or to
#: switch off one that an included config set
OptionalName = Annotated[str | None, AfterValidator(_blank_as_none)]


def _plugin_spec(value: Any) -> dict[str, Any]:
    if isinstance(value, str) and value:
        return as_spec(value)
    if isinstance(value, Mapping):
        name = value.get("name")
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError(f"'name' must be the name of a registered plugin; got {name!r}")
        return as_spec(value)
    raise ValueError("must be a plugin name or a table with 'name' and the plugin's params")


#: a params field naming another plugin: a plugin name (``"nltk-punkt"``) or a table with ``name``
#: and that plugin's params; a table without ``name`` overrides a default's params (:func:`merge_spec`)
PluginSpec = Annotated[dict[str, Any], BeforeValidator(_plugin_spec)]


def as_spec(value: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """A plugin spec as a table: a plugin given by name (``"top-k"``) is ``{"name": "top-k"}``, a
    table is copied, None is ``{}``."""
    if value is None:
        return {}
    return {"name": value} if isinstance(value, str) else dict(value)


def merge_spec(default: Mapping[str, Any] | str | None, override: Mapping[str, Any] | str | None, *,
               deep: bool = False) -> dict[str, Any]:
    """The one rule for a spec laid over another (a plugin's default stage spec, an included
    config table, a sweep point, a keyword override): each side given by name is ``{"name": ...}``
    first (:func:`as_spec`); an override without ``name`` or with the default's name -> the
    default's params updated by it; an override naming another plugin -> the override alone.
    ``deep``: a table (or a plugin given by name) inside both is merged by this same rule, key by
    key; any other value is replaced."""
    default, override = as_spec(default), as_spec(override)
    if override.get("name") not in (None, default.get("name")):
        return override
    if not deep:
        return {**default, **override}
    out = default
    for key, value in override.items():
        old = out.get(key)
        both_specs = isinstance(old, (Mapping, str)) and isinstance(value, (Mapping, str))
        if both_specs and (isinstance(old, Mapping) or isinstance(value, Mapping)):
            out[key] = merge_spec(old, value, deep=True)
        else:
            out[key] = value
    return out


def format_validation_error(owner: str, error: ValidationError, known: list[str] | None = None) -> str:
    """One readable message for all problems: "Owner: 'key' must ...; got X."."""
    problems = []
    for item in error.errors():
        loc = ".".join(str(part) for part in item["loc"]) or "params"
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
    #: the stage this plugin belongs to, declared by each stage's base class (``Scorer``: "scorer");
    #: the registry refuses a class registered under another stage
    stage: ClassVar[str | None] = None
    #: capability: the same input (and params, seed included) always gives the same output
    deterministic: ClassVar[bool] = True
    #: True when the plugin loads model weights on first use (conformance checks then skip the
    #: parts that need them)
    needs_model: ClassVar[bool] = False
    #: the extras (pyproject.toml's optional dependencies, :data:`ragsift.extras.EXTRA_MODULES`) this
    #: plugin needs; the registry checks them when it builds the plugin (see :meth:`required_extras`)
    extras: ClassVar[tuple[str, ...]] = ()
    #: params the conformance checks build the plugin with when it has required params
    conformance_params: ClassVar[dict[str, Any]] = {}
    #: one line saying what the plugin does (``ragsift plugins``); empty = the first sentence of
    #: the class's own docstring
    description: ClassVar[str] = ""
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

    def required_extras(self) -> tuple[str, ...]:
        """The extras this plugin needs with its params: :attr:`extras`, unless a plugin's params
        decide (a tokenizer file needs no model stack, a llama.cpp backend needs llama.cpp)."""
        return type(self).extras

    def config(self) -> dict[str, Any]:
        """The params that rebuild this plugin (JSON-compatible)."""
        return self.params.model_dump(mode="json")

    def warm_up(self) -> None:  # noqa: B027 - optional hook, empty by default
        """Load heavy resources. Called on first use; safe to call again. :func:`warm_up_all`
        also warms the plugins this one holds (a fallback splitter, a judge, inner scorers), so
        an override need not reach them itself."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config()!r})"


def nested_plugins(plugin: Plugin) -> list[Plugin]:
    """The plugins ``plugin`` holds in its attributes: directly, or in a dict, list or tuple."""
    found: list[Plugin] = []
    for value in getattr(plugin, "__dict__", {}).values():
        items = value.values() if isinstance(value, Mapping) else value if isinstance(value, (list, tuple)) else (value,)
        found.extend(item for item in items if isinstance(item, Plugin))
    return found


def warm_up_all(plugin: Plugin) -> None:
    """``plugin.warm_up()`` and that of every plugin it holds, at any depth, each once. Walked
    from the attributes rather than left to each plugin's ``warm_up``: an override that forgets
    a nested plugin (presplit's fallback splitter did) would leave its model to load on the
    first request, which is what warming up is for."""
    seen: set[int] = set()
    stack = [plugin]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        current.warm_up()
        stack.extend(reversed(nested_plugins(current)))
