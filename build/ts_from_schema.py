"""JSON Schema (as pydantic writes it) to TypeScript types: small, offline, no npm package.

It covers what pydantic emits for our models and ``TypedDict``s: ``$ref`` to named
definitions, objects (properties, ``required``, ``additionalProperties``), arrays and
tuples (``prefixItems``), ``anyOf``/``oneOf`` unions, ``enum``/``const`` literals and the
scalar types. Anything else is ``unknown``: loose, never wrong. Descriptions become doc
comments, defaults a ``@default`` tag.
"""

import json
import re
from typing import Any

SCALARS = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean"}
IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


class TsWriter:
    def __init__(self, definitions: dict[str, Any]) -> None:
        self.definitions = definitions

    def declarations(self) -> str:
        """One ``export interface`` (objects) or ``export type`` per named definition."""
        out = []
        for name in sorted(self.definitions):
            schema = self.definitions[name]
            doc = _doc(schema.get("description"), "")
            if _is_object(schema) and schema.get("properties") is not None:
                out.append(f"{doc}export interface {name} {self._object_body(schema, '')}\n")
            else:
                out.append(f"{doc}export type {name} = {self.type_of(schema)};\n")
        return "\n".join(out)

    def type_of(self, schema: Any, indent: str = "") -> str:
        if schema is True or schema == {}:
            return "unknown"
        if schema is False:
            return "never"
        if "$ref" in schema:
            return schema["$ref"].rpartition("/")[2]
        if "const" in schema:
            return json.dumps(schema["const"])
        if "enum" in schema:
            return " | ".join(json.dumps(value) for value in schema["enum"])
        for key in ("anyOf", "oneOf"):
            if key in schema:
                members = [self.type_of(part, indent) for part in schema[key]]
                return " | ".join(dict.fromkeys(_parenthesised(m) for m in members))
        if "allOf" in schema and len(schema["allOf"]) == 1:
            return self.type_of(schema["allOf"][0], indent)
        kind = schema.get("type")
        if isinstance(kind, list):
            return " | ".join(self.type_of({**schema, "type": one}, indent) for one in kind)
        if kind in SCALARS:
            return SCALARS[kind]
        if kind == "null":
            return "null"
        if kind == "array":
            if "prefixItems" in schema:
                items = ", ".join(self.type_of(item, indent) for item in schema["prefixItems"])
                return f"[{items}]"
            return f"{_parenthesised(self.type_of(schema.get('items', {}), indent))}[]"
        if _is_object(schema) and not schema.get("properties"):
            extra = schema.get("additionalProperties", True)
            value = "unknown" if extra in (True, {}) else self.type_of(extra, indent)
            return "Record<string, never>" if extra is False else f"Record<string, {value}>"
        if _is_object(schema):
            return self._object_body(schema, indent)
        return "unknown"

    def _object_body(self, schema: dict[str, Any], indent: str) -> str:
        inner = indent + "  "
        required = set(schema.get("required", []))
        lines = []
        for name, field in (schema.get("properties") or {}).items():
            key = name if IDENTIFIER.match(name) else json.dumps(name)
            optional = "" if name in required else "?"
            doc = _doc(field.get("description"), inner, field.get("default", _NO_DEFAULT))
            lines.append(f"{doc}{inner}{key}{optional}: {self.type_of(field, inner)};")
        extra = schema.get("additionalProperties")
        if extra is not None and extra is not False:
            # With named properties the index type is unknown: each of theirs must fit it.
            loose = extra is True or schema.get("properties")
            value = "unknown" if loose else self.type_of(extra, inner)
            lines.append(f"{inner}[key: string]: {value};")
        return "{\n" + "\n".join(lines) + f"\n{indent}}}"


_NO_DEFAULT = object()


def _is_object(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "object"


def _parenthesised(type_text: str) -> str:
    """A union inside an array or another union keeps its meaning: ``(A | B)[]``."""
    if " | " in type_text and not type_text.startswith(("{", "[")):
        return f"({type_text})"
    return type_text


def _doc(description: str | None, indent: str, default: Any = _NO_DEFAULT) -> str:
    # Python docstrings quote code as ``x``; TypeScript's doc comments as `x`.
    text = (description or "").replace("``", "`")
    lines = [line for line in text.splitlines() if line.strip()]
    if default is not _NO_DEFAULT and default is not None:
        lines.append(f"@default {json.dumps(default)}")
    if not lines:
        return ""
    safe = [line.replace("*/", "*\\/") for line in lines]  # a comment must not end early
    body = "\n".join(f"{indent} * {line}" for line in safe)
    return f"{indent}/**\n{body}\n{indent} */\n"
