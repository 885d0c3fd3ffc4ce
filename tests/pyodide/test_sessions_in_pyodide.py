"""The sessions contract inside Pyodide in Chromium: IndexedDB records, DuckDB-WASM mirror."""

from pathlib import Path

import pytest
from pytest_pyodide import run_in_pyodide

from contract import sessions_contract

SOURCE = (Path(__file__).parent.parent / "contract" / "sessions_contract.py").read_text()


@run_in_pyodide(packages=["airi-memory"])
async def run_sessions_case(selenium, source: str, case_name: str) -> str:
    from js import Object, airiHost
    from pyodide.ffi import to_js

    from airi_memory.api import MemorySystem
    from airi_memory.sql.wasm import WasmDuckDb
    from airi_memory.storage import MemoryDriver, Storage
    from airi_memory.storage.indexeddb import IndexedDbDriver

    namespace: dict = {}
    exec(compile(source, "sessions_contract.py", "exec"), namespace)
    await airiHost.idb.open("keyval-store", "keyval").clear("")

    async def open_system(clock=None, separate_engine=False, **options):
        sql = airiHost.sql
        if separate_engine:  # a second tab has its own DuckDB
            from js import createAiriHost, location

            sql = (
                await createAiriHost(
                    to_js({"runtimeUrl": location.href}, dict_converter=Object.fromEntries)
                )
            ).sql
        storage = Storage(MemoryDriver())
        storage.mount("local", IndexedDbDriver(airiHost.idb, base="airi-local"))
        storage.mount("outbox", IndexedDbDriver(airiHost.idb, base="airi-sync-queue"))
        extra = {"clock": clock} if clock else {}
        options = {"userId": "tester", **options}
        return await MemorySystem.open(storage, WasmDuckDb(sql), options, **extra)

    await namespace[case_name](open_system)
    return case_name


@pytest.mark.parametrize("case", sessions_contract.CASES, ids=lambda case: case.__name__)
def test_sessions_contract_in_pyodide(browser_host, case):
    assert run_sessions_case(browser_host, SOURCE, case.__name__) == case.__name__
