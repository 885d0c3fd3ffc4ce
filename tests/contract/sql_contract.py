"""The SQL contract: what every ``SqlEngine`` (DuckDB-WASM, duckdb) must do the same way.

Self-contained so that it runs inside Pyodide too.
"""

from airi_memory.errors import InvalidValueError, ReadOnlyQueryError, SqlError


async def case_bound_parameters_and_types(sql):
    result = await sql.query(
        "SELECT $1::INTEGER + 1 AS n, $2 AS s, $3::DOUBLE AS d, $4::BOOLEAN AS b, NULL AS nothing",
        [41, "it's; DROP TABLE x", 2.5, True],
    )
    assert result.columns == ["n", "s", "d", "b", "nothing"]
    assert result.rows() == [
        {"n": 42, "s": "it's; DROP TABLE x", "d": 2.5, "b": True, "nothing": None}
    ]


async def case_columnar_insert_and_query(sql):
    await sql.execute(
        "CREATE TABLE contract_rows (id VARCHAR, n BIGINT, score DOUBLE, note VARCHAR)"
    )
    count = 1000
    inserted = await sql.insert_columns(
        "contract_rows",
        {
            "id": [f"r{i:04d}" for i in range(count)],
            "n": [1_767_225_600_000 + i for i in range(count)],
            "score": [i / 4 for i in range(count)],
            "note": [None if i % 3 else f"note {i}" for i in range(count)],
        },
    )
    assert inserted == count
    result = await sql.query(
        "SELECT id, n, score, note FROM contract_rows WHERE n >= $1 ORDER BY id LIMIT 4",
        [1_767_225_600_000 + 996],
    )
    assert result.column("id") == ["r0996", "r0997", "r0998", "r0999"]
    assert result.column("n") == [1_767_225_600_996 + i for i in range(4)]
    assert result.column("score") == [249.0, 249.25, 249.5, 249.75]
    assert result.column("note") == ["note 996", None, None, "note 999"]
    total = await sql.query("SELECT count(*) AS c, count(note) AS notes FROM contract_rows")
    assert total.rows() == [{"c": count, "notes": 334}]


async def case_empty_results_and_inserts(sql):
    await sql.execute("CREATE TABLE contract_empty (id VARCHAR)")
    assert await sql.insert_columns("contract_empty", {"id": []}) == 0
    result = await sql.query("SELECT id FROM contract_empty")
    assert len(result) == 0 and result.rows() == []


async def case_bad_identifiers_are_refused(sql):
    for table, columns in [("x; DROP", {"a": [1]}), ("ok", {"a b": [1]}), ("ok", {})]:
        try:
            await sql.insert_columns(table, columns)
        except InvalidValueError:
            pass
        else:
            raise AssertionError(f"insert into {table!r} {list(columns)} was accepted")
    try:
        await sql.insert_columns("ok", {"a": [1, 2], "b": [1]})
    except InvalidValueError as error:
        assert "differ in length" in str(error)
    else:
        raise AssertionError("columns of different lengths were accepted")


async def case_read_only_queries(sql):
    await sql.execute("CREATE TABLE contract_ro (v INTEGER)")
    await sql.execute("INSERT INTO contract_ro VALUES (1), (2)")
    rows = await sql.read_only_query("SELECT sum(v)::INTEGER AS total FROM contract_ro")
    assert rows.rows() == [{"total": 3}]
    text = await sql.read_only_query("SELECT 'delete from x; drop' AS s -- update\n")
    assert text.rows() == [{"s": "delete from x; drop"}]
    for statement in [
        "DELETE FROM contract_ro",
        "SELECT 1; DROP TABLE contract_ro",
        "WITH x AS (SELECT 1) INSERT INTO contract_ro SELECT * FROM x",
        "ATTACH 'other.db'",
        "",
    ]:
        try:
            await sql.read_only_query(statement)
        except ReadOnlyQueryError as error:
            assert "query()" in str(error)
        else:
            raise AssertionError(f"{statement!r} was let through")
    still = await sql.query("SELECT count(*)::INTEGER AS n FROM contract_ro")
    assert still.scalar() == 2


async def case_sql_errors_name_the_problem(sql):
    try:
        await sql.query("SELECT * FROM no_such_table_anywhere")
    except SqlError as error:
        assert "no_such_table_anywhere" in str(error)
    else:
        raise AssertionError("a query on a missing table succeeded")


CASES = [value for name, value in sorted(globals().items()) if name.startswith("case_")]
