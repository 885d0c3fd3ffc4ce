"""Every contract (sessions, context, search) inside Pyodide in Chromium: IndexedDB
records, the DuckDB-WASM mirror, gpt-tokenizer, fetch. One runner for all of them."""

from pathlib import Path

import pytest
from pytest_pyodide import run_in_pyodide

from contract import context_contract, durability_contract, search_contract, sessions_contract

CONTRACTS = {
    module.__name__.rsplit(".", 1)[1]: module
    for module in (sessions_contract, durability_contract, context_contract, search_contract)
}
FOLDER = Path(__file__).parent.parent / "contract"
SOURCES = {name: (FOLDER / f"{name}.py").read_text() for name in CONTRACTS}
COMMON = (FOLDER / "common.py").read_text()


@run_in_pyodide(packages=["airi-memory"])
async def run_case(selenium, common: str, source: str, filename: str, case_name: str) -> str:
    import sys
    import types

    from js import airiHost

    from airi_memory.browser.ffi import to_javascript
    from airi_memory.browser.host import open_browser_system

    # The contracts import contract.common: give Pyodide that module from its source.
    package, shared = types.ModuleType("contract"), types.ModuleType("contract.common")
    package.__path__ = []
    exec(compile(common, "common.py", "exec"), shared.__dict__)
    sys.modules.update({"contract": package, "contract.common": shared})
    namespace: dict = {}
    exec(compile(source, filename, "exec"), namespace)
    await airiHost.idb.open("keyval-store", "keyval").clear("")
    opened = []

    async def open_system(clock=None, separate_engine=False, **options):
        """The worker's own opener; no local model, as on CPython. A hand-moved clock is
        also the system's sleep."""
        host = airiHost
        if separate_engine:  # a second tab has its own DuckDB (the same IndexedDB)
            from js import createAiriHost, location

            host = await createAiriHost(to_javascript({"runtimeUrl": location.href}))
        time = {"clock": clock, "sleep": clock.sleep} if clock else {}
        system = await open_browser_system(
            host, {"userId": "tester", **options}, local_model=False, **time
        )
        opened.append(system)
        return system

    try:
        await namespace[case_name](open_system)
    except AssertionError:  # its message and line, which the runner's report leaves out
        import traceback

        return traceback.format_exc()
    finally:
        for system in opened:  # no background task may outlive its case in this page
            await system.scheduler.stop()
            await system.embeddings.stop()
    return case_name


CASES = [(name, case) for name, module in CONTRACTS.items() for case in module.CASES]


@pytest.mark.parametrize(("contract", "case"), CASES, ids=lambda v: getattr(v, "__name__", v))
def test_contract_in_pyodide(browser_host, contract, case):
    result = run_case(browser_host, COMMON, SOURCES[contract], f"{contract}.py", case.__name__)
    assert result == case.__name__
