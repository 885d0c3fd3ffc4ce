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


async def case_typed_array_columns_and_text_in_any_script(sql):
    """Columns given as ``array`` go as they are; text round-trips whether it is all
    ASCII (laid out in one go) or not, empty strings included."""
    from array import array

    await sql.execute("CREATE TABLE contract_typed (k INTEGER, ascii VARCHAR, other VARCHAR)")
    ascii_text = ["", "plain", "0001-abc", "x" * 300]
    any_text = ["café", "", "東京タワー", "🙂 ok"]
    count = await sql.insert_columns(
        "contract_typed",
        {"k": array("i", [3, -1, 2**31 - 1, 0]), "ascii": ascii_text, "other": any_text},
    )
    assert count == 4
    result = await sql.query("SELECT k, ascii, other FROM contract_typed ORDER BY k")
    assert result.column("k") == [-1, 0, 3, 2**31 - 1]
    assert result.column("ascii") == ["plain", "x" * 300, "", "0001-abc"]
    assert result.column("other") == ["", "🙂 ok", "café", "東京タワー"]


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


async def _refused(sql, statement, *words):
    """``statement`` fails with a ReadOnlyQueryError whose message has ``words``."""
    try:
        await sql.read_only_query(statement)
    except ReadOnlyQueryError as error:
        message = str(error)
        assert "query()" in message, message
        for word in words:
            assert word in message, (statement, message)
    else:
        raise AssertionError(f"{statement!r} was let through")


async def _state(sql):
    """What a refused diagnostic query must leave as it was."""
    rows = await sql.query("SELECT v FROM contract_guard ORDER BY v")
    tables = await sql.query("SELECT table_name FROM duckdb_tables() ORDER BY 1")
    databases = await sql.query("SELECT database_name FROM duckdb_databases() ORDER BY 1")
    settings = await sql.query(
        "SELECT current_setting('threads') AS threads, current_setting('enable_logging') AS logging"
    )
    return rows.column("v"), tables.column("table_name"), databases.rows(), settings.rows()


async def case_read_only_queries_cannot_change_anything(sql):
    await sql.execute("CREATE TABLE contract_guard (v INTEGER)")
    await sql.execute("INSERT INTO contract_guard VALUES (1), (2), (3)")
    await sql.execute("CREATE SEQUENCE contract_guard_seq")
    before = await _state(sql)
    assert before[0] == [1, 2, 3]
    one_statement = "one SELECT"
    for statement, words in [
        ("SELECT $$--$$; DELETE FROM contract_guard", [one_statement]),
        ("SELECT 1; DELETE FROM contract_guard", [one_statement]),
        ("SELECT 1 /* ; */; DELETE FROM contract_guard -- ;", [one_statement]),
        ("SELECT 1 --\n; DELETE FROM contract_guard", [one_statement]),
        ("SELECT 1); DELETE FROM contract_guard; SELECT * FROM (SELECT 1", [one_statement]),
        ("DELETE FROM contract_guard", [one_statement, "DELETE"]),
        ("UPDATE contract_guard SET v = 0", [one_statement, "UPDATE"]),
        ("SET threads = 1", [one_statement]),
        ("COPY contract_guard TO 'contract_guard.csv'", [one_statement]),
        ("ATTACH ':memory:' AS contract_other", [one_statement]),
        ("CREATE TEMP TABLE contract_temp AS SELECT 1", [one_statement]),
        ("PRAGMA version", [one_statement]),
        ("PRAGMA threads = 1", [one_statement]),
        ("EXPORT DATABASE 'contract_export'", [one_statement]),
        ("CHECKPOINT", [one_statement]),
        ("EXPLAIN SELECT 1", [one_statement]),
        ("SELECT 1 INTO TEMP contract_into", [one_statement]),
        ("SELECT nextval('contract_guard_seq')", ["read-only"]),
        ("SELECT * FROM read_csv('/etc/hostname')", ["files or URLs"]),
        ("SELECT * FROM read_text('https://example.com/x.txt')", ["files or URLs"]),
        ("FROM glob('/etc/*')", ["files or URLs"]),
        ("SELECT * FROM query('DELETE FROM contract_guard')", ["query()"]),
        ("FROM query(CASE WHEN random() < 2 THEN 'SELECT 1' END)", ["query()"]),
        ("FROM system.main.\"QUERY_TABLE\"('contract_guard')", ["query_table()"]),
        ("SELECT * FROM enable_logging()", ["enable_logging()"]),
        ("FROM (SELECT 1), truncate_duckdb_logs()", ["truncate_duckdb_logs()"]),
        ("SELECT (SELECT count(*) FROM checkpoint())", ["checkpoint()"]),
        ('FROM "FORCE_CHECKPOINT"()', ["force_checkpoint()"]),
    ]:
        await _refused(sql, statement, *words)
        assert await _state(sql) == before, statement
    # DuckDB does not even look for a file here: no table has that name.
    for path in ["/etc/hostname", "https://example.com/x.csv"]:
        try:
            await sql.read_only_query(f"FROM '{path}'")
        except (ReadOnlyQueryError, SqlError) as error:
            assert path in str(error)
        else:
            raise AssertionError(f"FROM {path!r} was let through")
    assert await _state(sql) == before


async def case_read_only_queries_still_answer(sql):
    await sql.execute("CREATE TABLE contract_answers (k VARCHAR, v INTEGER)")
    await sql.execute("INSERT INTO contract_answers VALUES ('a', 1), ('a', 2), ('b', 5)")
    grouped = await sql.read_only_query(
        "SELECT k, sum(v)::INTEGER AS total FROM contract_answers WHERE v >= $1 "
        "GROUP BY k ORDER BY k;",
        [2],
    )
    assert grouped.rows() == [{"k": "a", "total": 2}, {"k": "b", "total": 5}]
    with_cte = await sql.read_only_query(
        "WITH big AS (SELECT * FROM contract_answers WHERE v > ?) "
        "SELECT count(*)::INTEGER AS n, max(k) AS top FROM big -- trailing comment",
        [1],
    )
    assert with_cte.rows() == [{"n": 2, "top": "b"}]
    from_first = await sql.read_only_query(
        "FROM contract_answers SELECT v WHERE k = $1 ORDER BY v", ["a"]
    )
    assert from_first.column("v") == [1, 2]
    values = await sql.read_only_query("VALUES (1, 'x'), (2, 'y')")
    assert values.tuples() == [(1, "x"), (2, "y")]
    described = await sql.read_only_query("DESCRIBE contract_answers")
    assert described.column("column_name") == ["k", "v"]
    shown = await sql.read_only_query("SHOW TABLES")
    assert "contract_answers" in shown.column("name")
    summary = await sql.read_only_query("SUMMARIZE contract_answers")
    assert summary.column("column_name") == ["k", "v"]
    catalog = await sql.read_only_query(
        "SELECT count(*)::INTEGER AS n FROM duckdb_tables() WHERE table_name = $1",
        ["contract_answers"],
    )
    assert catalog.scalar() == 1
    memory = await sql.read_only_query(
        "SELECT count(*) > 0 AS any FROM duckdb_memory() WHERE tag = 'IN_MEMORY_TABLE'"
    )
    assert memory.scalar() is True
    series = await sql.read_only_query(
        "SELECT sum(range)::INTEGER AS s FROM range($1::BIGINT)", [5]
    )
    assert series.scalar() == 10
    dollar = await sql.read_only_query("SELECT $$it's; -- not a comment$$ AS s")
    assert dollar.scalar() == "it's; -- not a comment"
    text = await sql.read_only_query("SELECT $1 AS s", ["a query; DELETE FROM x"])
    assert text.scalar() == "a query; DELETE FROM x"
    try:
        await sql.read_only_query("SELECT * FROM contract_missing")
    except SqlError as error:
        assert not isinstance(error, ReadOnlyQueryError)
        assert "contract_missing" in str(error)
    else:
        raise AssertionError("a query on a missing table succeeded")
    after = await sql.query("SELECT count(*)::INTEGER AS n FROM contract_answers")
    assert after.scalar() == 3


async def case_dollar_quoted_text_hides_no_second_statement(sql):
    await sql.execute("CREATE TABLE contract_dollar (v INTEGER)")
    await sql.execute("INSERT INTO contract_dollar VALUES (1), (2)")
    try:
        await sql.read_only_query("SELECT $$--$$; DELETE FROM contract_dollar")
    except ReadOnlyQueryError as error:
        assert "query()" in str(error)
    else:
        raise AssertionError("a DELETE after a dollar-quoted string was let through")
    still = await sql.query("SELECT count(*)::INTEGER AS n FROM contract_dollar")
    assert still.scalar() == 2


async def case_sql_errors_name_the_problem(sql):
    try:
        await sql.query("SELECT * FROM no_such_table_anywhere")
    except SqlError as error:
        assert "no_such_table_anywhere" in str(error)
    else:
        raise AssertionError("a query on a missing table succeeded")


CASES = [value for name, value in sorted(globals().items()) if name.startswith("case_")]
