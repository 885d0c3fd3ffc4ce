"""The SQL contract on CPython, over the duckdb package."""

import pytest

from airi_memory.native.sql import NativeDuckDb
from contract.sql_contract import CASES


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.__name__)
async def test_sql_contract(case):
    engine = NativeDuckDb()
    try:
        await case(engine)
    finally:
        await engine.close()


async def test_extension_autoloading_is_off():
    engine = NativeDuckDb()
    result = await engine.query(
        "SELECT value FROM duckdb_settings() WHERE name = 'autoload_known_extensions'"
    )
    assert result.scalar() == "false"
