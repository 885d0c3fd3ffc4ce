"""The shared contracts inside real Pyodide in Chromium, on the browser's port implementations.

The contract modules' source is sent into the page and run there unchanged, so the cases
that pass on CPython (memory, fs, duckdb) pass here on IndexedDB and DuckDB-WASM.
"""

from pathlib import Path

import pytest
from pytest_pyodide import run_in_pyodide

from contract import sql_contract, storage_contract

CONTRACTS = Path(__file__).parent.parent / "contract"
STORAGE_SOURCE = (CONTRACTS / "storage_contract.py").read_text()
SQL_SOURCE = (CONTRACTS / "sql_contract.py").read_text()


@run_in_pyodide(packages=["airi-memory"])
async def run_storage_case(selenium, source: str, case_name: str, kind: str) -> str:
    from js import airiHost

    from airi_memory.browser.indexeddb import IndexedDbDriver
    from airi_memory.storage import MemoryDriver, Storage
    from airi_memory.storage.prefixed import PrefixedDriver

    namespace: dict = {}
    exec(compile(source, "storage_contract.py", "exec"), namespace)
    await airiHost.idb.open("keyval-store", "keyval").clear("")
    storage = Storage(MemoryDriver())
    if kind == "memory":
        store = MemoryDriver()
        storage.mount("local", PrefixedDriver(store, "airi-local"))
        storage.mount("outbox", PrefixedDriver(store, "airi-sync-queue"))
    else:
        database = IndexedDbDriver(airiHost.idb)
        storage.mount("local", database.view("airi-local"))
        storage.mount("outbox", database.view("airi-sync-queue"))
    await namespace[case_name](storage)
    return case_name


@run_in_pyodide(packages=["airi-memory"])
async def run_sql_case(selenium, source: str, case_name: str) -> str:
    from js import airiHost

    from airi_memory.browser.sql import WasmDuckDb

    namespace: dict = {}
    exec(compile(source, "sql_contract.py", "exec"), namespace)
    engine = WasmDuckDb(airiHost.sql)
    for table in ("contract_rows", "contract_empty", "contract_ro", "contract_typed"):
        await engine.execute(f"DROP TABLE IF EXISTS {table}")
    await namespace[case_name](engine)
    return case_name


@pytest.mark.parametrize("kind", ["memory", "indexeddb"])
@pytest.mark.parametrize("case", storage_contract.CASES, ids=lambda case: case.__name__)
def test_storage_contract_in_pyodide(browser_host, case, kind):
    assert run_storage_case(browser_host, STORAGE_SOURCE, case.__name__, kind) == case.__name__


@pytest.mark.parametrize("case", sql_contract.CASES, ids=lambda case: case.__name__)
def test_sql_contract_on_duckdb_wasm(browser_host, case):
    assert run_sql_case(browser_host, SQL_SOURCE, case.__name__) == case.__name__


@run_in_pyodide(packages=["airi-memory"])
async def pydantic_validates_options(selenium) -> list[str]:
    import pydantic

    from airi_memory.errors import InvalidValueError
    from airi_memory.options import parse_options

    assert pydantic.VERSION.startswith("2.14")
    assert parse_options({"userId": "alice"}).user_id == "alice"
    messages = []
    for bad in ({"userId": ""}, {"userId": 5}, {"unknown": 1}):
        try:
            parse_options(bad)
        except InvalidValueError as error:
            messages.append(str(error))
    return messages


def test_real_pydantic_validates_inside_pyodide(selenium):
    messages = pydantic_validates_options(selenium)
    assert len(messages) == 3
    assert "userId" in messages[0] and "unknown" in messages[2]
