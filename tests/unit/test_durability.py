"""The durability contract on CPython (memory and fs drivers, duckdb)."""

import pytest

from contract.durability_contract import CASES
from native_systems import system_factory


@pytest.mark.parametrize("kind", ["memory", "fs"])
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.__name__)
async def test_durability_contract(case, kind, tmp_path):
    await case(system_factory(kind, tmp_path))
