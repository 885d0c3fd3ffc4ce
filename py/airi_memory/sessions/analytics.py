"""Analytics over the DuckDB mirror: what a companion app shows on a statistics page.

Sums are cast to BIGINT: DuckDB sums integers as HUGEINT, which DuckDB-WASM hands over
as text while the duckdb package gives an int.
"""

from typing import Any

from ..sql import SqlEngine

_PER_DAY = """
    SELECT strftime(epoch_ms(m.created_at), '%Y-%m-%d') AS day, count(*) AS messages
    FROM chat_messages m JOIN chat_sessions s USING (session_id)
    WHERE s.user_id = ? GROUP BY day ORDER BY day"""
_PER_ROLE = """
    SELECT m.role, count(*) AS messages, sum(m.chars)::BIGINT AS characters
    FROM chat_messages m JOIN chat_sessions s USING (session_id)
    WHERE s.user_id = ? GROUP BY m.role ORDER BY messages DESC, m.role"""
_PER_SESSION = """
    SELECT s.session_id AS "sessionId", any_value(s.title) AS title, count(m.id) AS messages,
           coalesce(sum(m.chars), 0)::BIGINT AS characters
    FROM chat_sessions s LEFT JOIN chat_messages m USING (session_id)
    WHERE s.user_id = ? GROUP BY s.session_id ORDER BY messages DESC, s.session_id LIMIT ?"""
_PER_CHARACTER = """
    SELECT s.character_id AS "characterId", count(DISTINCT s.session_id) AS sessions,
           count(m.id) AS messages
    FROM chat_sessions s LEFT JOIN chat_messages m USING (session_id)
    WHERE s.user_id = ? GROUP BY s.character_id ORDER BY messages DESC, s.character_id"""
_TOTALS = """
    SELECT (SELECT count(*) FROM chat_sessions WHERE user_id = ?) AS sessions,
           count(m.id) AS messages, coalesce(sum(m.chars), 0)::BIGINT AS characters
    FROM chat_messages m JOIN chat_sessions s USING (session_id) WHERE s.user_id = ?"""


async def message_analytics(sql: SqlEngine, user_id: str, top_sessions: int = 50) -> dict[str, Any]:
    totals = (await sql.query(_TOTALS, [user_id, user_id])).rows()[0]
    return {
        "messagesPerDay": (await sql.query(_PER_DAY, [user_id])).rows(),
        "perRole": (await sql.query(_PER_ROLE, [user_id])).rows(),
        "perSession": (await sql.query(_PER_SESSION, [user_id, top_sessions])).rows(),
        "perCharacter": (await sql.query(_PER_CHARACTER, [user_id])).rows(),
        "totals": {
            **totals,
            # The seed's estimate: one token per four characters.
            "estimatedTokens": -(-totals["characters"] // 4),
        },
    }
