"""Generate the facade's method map and its TypeScript declarations from the method table.

``py/airi_memory/api_methods.py`` is the one source: ``write_facade_files(folder)`` writes
``airi-memory-methods.mjs`` (imported by ``airi-memory.mjs``: one forwarder per wire
name, and where the browser's mounts are stored, from ``airi_memory.storage``) and
``airi-memory.d.ts`` (every method typed; pydantic models and ``TypedDict``s as named
types, from the JSON Schemas pydantic gives, converted by ``ts_from_schema``).
The JS-only part of the declarations (the app's functions, events, boot) is written by
hand in ``web/airi-memory.handwritten.d.ts`` and appended.

build_dist.py calls it for dist/; the tests call it into a temporary folder.
"""

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "py"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from airi_memory import models  # noqa: E402
from airi_memory.api_methods import METHODS, Method  # noqa: E402
from airi_memory.models import json_schemas  # noqa: E402
from airi_memory.options import SystemOptions  # noqa: E402
from airi_memory.storage import (  # noqa: E402
    BROWSER_DB_NAME,
    BROWSER_STORE_NAME,
    LOCAL_BASE,
    OUTBOX_BASE,
)
from ts_from_schema import TsWriter  # noqa: E402

METHODS_MODULE = "airi-memory-methods.mjs"
DECLARATIONS = "airi-memory.d.ts"
HANDWRITTEN_DECLARATIONS = ROOT / "web" / "airi-memory.handwritten.d.ts"


STORED = {
    "dbName": BROWSER_DB_NAME,
    "storeName": BROWSER_STORE_NAME,
    "bases": [LOCAL_BASE, OUTBOX_BASE],
}


class WireSchema(GenerateJsonSchema):
    """Results are described as the library writes them: a model's ``ALWAYS_WRITTEN``
    fields are required there (defaults or not), optional fields nobody set are absent."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._models: list[type] = []

    def model_schema(self, schema: Any) -> dict[str, Any]:
        self._models.append(schema["cls"])
        try:
            return super().model_schema(schema)
        finally:
            self._models.pop()

    def model_fields_schema(self, schema: Any) -> dict[str, Any]:
        json_schema = super().model_fields_schema(schema)
        always = getattr(self._models[-1], "ALWAYS_WRITTEN", ()) if self._models else ()
        if self.mode == "serialization" and always:
            fields = self._models[-1].model_fields
            written = [fields[name].serialization_alias or name for name in always]
            required = [*json_schema.get("required", []), *written]
            json_schema["required"] = list(dict.fromkeys(required))
        return json_schema


def _adapters(methods: tuple[Method, ...]) -> list[tuple[Any, str, TypeAdapter[Any]]]:
    """One (key, mode, adapter) per parameter and result, plus the shared named types."""
    inputs: list[tuple[Any, str, TypeAdapter[Any]]] = []
    for method in methods:
        for param in method.params:
            inputs.append(((method.name, param.name), "validation", TypeAdapter(param.type)))
        inputs.append(((method.name, None), "serialization", TypeAdapter(method.result)))
    # Named types the app meets outside any one method: the contract's models (as
    # returned) and the options Python validates.
    for name in json_schemas():
        model = getattr(models, name)
        inputs.append((("model", name), "serialization", TypeAdapter(model)))
    inputs.append((("options", None), "validation", TypeAdapter(SystemOptions)))  # as given
    return inputs


def _named(definitions: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """Definitions under TypeScript names: a model read and written differently is
    ``Name`` as the library returns it and ``NameInput`` as it accepts it."""
    renamed = {}
    for name in definitions:
        if name.endswith("-Output"):
            renamed[name] = name.removesuffix("-Output")
        elif name.endswith("-Input"):
            renamed[name] = name.removesuffix("-Input") + "Input"
        else:
            renamed[name] = name
    return {renamed[name]: schema for name, schema in definitions.items()}, renamed


def schemas(methods: tuple[Method, ...] = METHODS) -> tuple[dict[Any, Any], dict[str, Any]]:
    """(schema per key, named definitions), every $ref pointing at a TypeScript name."""
    by_key, top = TypeAdapter.json_schemas(
        _adapters(methods),
        by_alias=True,
        ref_template="#/$defs/{model}",
        schema_generator=WireSchema,
    )
    definitions, renamed = _named(top.get("$defs", {}))
    text = json.dumps([{str(k): v for k, v in by_key.items()}, definitions])
    for old, new in renamed.items():
        text = text.replace(f'"#/$defs/{old}"', f'"#/$defs/{new}"')
    by_key_text, definitions = json.loads(text)
    return {key: by_key_text[str((key, mode))] for key, mode in by_key}, definitions


def method_map(methods: tuple[Method, ...] = METHODS) -> str:
    """The facade's method map: wire name -> parameter names (required ones first)."""
    lines = [
        f"  {json.dumps(method.name)}: "
        + json.dumps(
            {
                "params": [param.name for param in method.params],
                "required": sum(param.required for param in method.params),
            }
        )
        + ","
        for method in methods
    ]
    return (
        "// Generated by build/facade.py from py/airi_memory/api_methods.py: do not edit.\n"
        "// Each wire name is the facade path; `required` leading parameters are always sent\n"
        "// (missing ones as null), optional ones only up to the last one given.\n"
        "export const METHODS = {\n" + "\n".join(lines) + "\n};\n"
        "\n// Where the mounts' records are, for eraseMemorySystem (no Python runs for it).\n"
        f"export const STORED = {json.dumps(STORED)};\n"
    )


def declarations(methods: tuple[Method, ...] = METHODS) -> str:
    by_key, definitions = schemas(methods)
    writer = TsWriter(definitions)
    groups: dict[str, list[str]] = {method.name.rpartition(".")[0]: [] for method in methods}
    for method in methods:
        if method.declared_by_hand:
            continue
        group, _, member = method.name.rpartition(".")
        params = []
        for param in method.params:
            optional = "?" if not param.required else ""
            params.append(
                f"{param.name}{optional}: {writer.type_of(by_key[(method.name, param.name)])}"
            )
        result = writer.type_of(by_key[(method.name, None)])
        line = f"  /** {method.doc} */\n  {member}({', '.join(params)}): Promise<{result}>;"
        groups[group].append(line)
    parts = [
        "// airi-memory: TypeScript declarations. The named types and the method interfaces\n"
        "// are generated by build/facade.py from py/airi_memory/api_methods.py and the\n"
        "// pydantic models' JSON Schemas; the part after them is written by hand\n"
        "// (web/airi-memory.handwritten.d.ts): what the facade does on the page alone.\n",
        writer.declarations(),
    ]
    top = groups.pop("", [])
    for group, lines in sorted(groups.items()):
        name = _group_interface(group)
        top.append(f"  {group}: {name};")
        parts.append(f"export interface {name} {{\n" + "\n".join(lines) + "\n}\n")
    parts.append("export interface GeneratedMethods {\n" + "\n".join(top) + "\n}\n")
    parts.append(HANDWRITTEN_DECLARATIONS.read_text())
    return "\n".join(parts)


def _group_interface(group: str) -> str:
    """``sessions`` -> ``SessionsMethods``: the hand-written part merges into these."""
    return f"{group[:1].upper()}{group[1:]}Methods"


def write_facade_files(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / METHODS_MODULE, folder / DECLARATIONS]
    written[0].write_text(method_map())
    written[1].write_text(declarations())
    return written


if __name__ == "__main__":
    for path in write_facade_files(Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "dist")):
        print(path)
