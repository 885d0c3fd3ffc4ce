"""The method table is the one source of the API: every entry dispatches to a handler
whose parameters are the ones the table declares (so the generated .d.ts tells the truth)."""

import inspect

from airi_memory.api_methods import BY_NAME, METHODS, REQUIRED
from contract.common import QUIET
from native_systems import system_factory


async def test_every_table_entry_dispatches_to_a_handler_taking_its_parameters(tmp_path):
    system = await system_factory("memory", tmp_path)(**QUIET)
    try:
        assert set(system._methods) == set(BY_NAME)
        assert len(BY_NAME) == len(METHODS), "a wire name is in the table twice"
        for method in METHODS:
            handler = system._methods[method.name]
            assert inspect.iscoroutinefunction(handler), method.name
            declared = list(inspect.signature(handler).parameters.values())
            given = declared[: len(method.params)]
            assert len(given) == len(method.params), f"{method.name}: too many parameters"
            for param, python in zip(method.params, given, strict=True):
                python_default = (
                    REQUIRED if python.default is inspect.Parameter.empty else python.default
                )
                assert param.default == python_default, (method.name, param.name)
            beyond = declared[len(method.params) :]
            assert all(p.default is not inspect.Parameter.empty for p in beyond), method.name
        ping = await system.dispatch("ping", [])
        assert ping == {"ok": True, "value": "pong"}
        ingested = await system.dispatch(
            "context.ingestContext", [{"sourceType": "t", "sourceId": "i", "content": {"a": 1}}]
        )
        assert ingested["value"]["content"] == {"a": 1}
        old_name = await system.dispatch("context.ingest", [{}])
        assert old_name["error"]["name"] == "UnknownMethodError"
    finally:
        await system.close()


def test_table_names_are_facade_paths():
    """camelCase segments, at most one group: ``sessions.addMessage``, ``indexEmbeddings``."""
    for method in METHODS:
        parts = method.name.split(".")
        assert 1 <= len(parts) <= 2, method.name
        assert all(part[:1].islower() and part.isalnum() for part in parts), method.name
        assert method.doc and "\n" not in method.doc, method.name
