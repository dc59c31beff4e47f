"""JSON Schemas of tool arguments from a function's type hints (SPEC/1.0 gabp.md §4.5: ``inputSchema``)."""

from __future__ import annotations

import collections.abc
import enum
import inspect
import types
import typing
from typing import Any, Callable, Dict, List, Optional

from ._gabp import ToolCall
from .errors import InvalidArgument

__all__ = ["input_schema", "call_parameter", "enum_parameters", "schema_of"]

_SCALARS: Dict[Any, Dict[str, Any]] = {
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    str: {"type": "string"},
    type(None): {"type": "null"},
}


def schema_of(hint: Any, where: str) -> Dict[str, Any]:
    """The JSON Schema of values of type ``hint``; ``where`` names the parameter in errors."""
    if hint is Any or hint is inspect.Parameter.empty or hint is object:
        return {}
    if hint in _SCALARS:
        return dict(_SCALARS[hint])
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return {"enum": [member.value for member in hint]}
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union or origin is getattr(types, "UnionType", typing.Union):
        return {"anyOf": [schema_of(a, where) for a in args]}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if hint in (list, tuple) or origin in (list, tuple, collections.abc.Sequence):
        if origin is tuple and args and args[-1] is not Ellipsis:
            return {
                "type": "array",
                "prefixItems": [schema_of(a, where) for a in args],
                "minItems": len(args),
                "maxItems": len(args),
            }
        schema: Dict[str, Any] = {"type": "array"}
        if args:
            schema["items"] = schema_of(args[0], where)
        return schema
    if hint is dict or origin in (dict, collections.abc.Mapping):
        schema = {"type": "object"}
        if len(args) == 2:
            if args[0] is not str:
                raise InvalidArgument(f"{where}: JSON object keys are strings, not {args[0]!r}")
            schema["additionalProperties"] = schema_of(args[1], where)
        return schema
    if isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__annotations__"):  # a TypedDict
        hints = typing.get_type_hints(hint)
        required = sorted(getattr(hint, "__required_keys__", hints.keys()))
        return {
            "type": "object",
            "properties": {k: schema_of(v, f"{where}.{k}") for k, v in hints.items()},
            "required": required,
            "additionalProperties": False,
        }
    raise InvalidArgument(
        f"{where}: no JSON Schema for type {hint!r}; give the tool an explicit input_schema"
    )


def _hints(function: Callable[..., Any], name: str) -> Dict[str, Any]:
    try:
        return typing.get_type_hints(function)
    except Exception as e:  # a forward reference that does not resolve
        raise InvalidArgument(f"tool {name}: its type hints do not resolve: {e}") from e


def call_parameter(function: Callable[..., Any], name: str) -> Optional[str]:
    """The parameter of ``function`` annotated :class:`gabp.ToolCall`, if any: it gets the call, not an argument."""
    for parameter, hint in _hints(function, name).items():
        if hint is ToolCall:
            return parameter
    return None


def enum_parameters(function: Callable[..., Any], name: str) -> Dict[str, Any]:
    """The parameters of ``function`` annotated with an :class:`enum.Enum`, and their enums: their arguments
    arrive as values and are handed over as members."""
    return {
        parameter: hint
        for parameter, hint in _hints(function, name).items()
        if parameter != "return" and isinstance(hint, type) and issubclass(hint, enum.Enum)
    }


def input_schema(function: Callable[..., Any], name: str) -> Dict[str, Any]:
    """The ``inputSchema`` of a tool served by ``function``: one property per parameter (but the one annotated
    :class:`gabp.ToolCall`), required unless it has a default; unknown arguments are refused unless the
    function takes ``**kwargs``."""
    signature = inspect.signature(function)
    hints = _hints(function, name)
    properties: Dict[str, Any] = {}
    required: List[str] = []
    extra = False
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            extra = True
            continue
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.POSITIONAL_ONLY):
            raise InvalidArgument(
                f"tool {name}: parameter {parameter.name} cannot be given by name; tools are called with keywords"
            )
        hint = hints.get(parameter.name, inspect.Parameter.empty)
        if hint is ToolCall:
            continue
        properties[parameter.name] = schema_of(hint, f"tool {name}: parameter {parameter.name}")
        if parameter.default is inspect.Parameter.empty:
            required.append(parameter.name)
    schema: Dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if not extra:
        schema["additionalProperties"] = False
    return schema
