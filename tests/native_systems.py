"""The contracts' ``open_system`` on CPython: the native host's own opener, over memory
kept between opens or over files, with the contract's defaults."""

from airi_memory.native.host import InMemory, open_native_system


def system_factory(kind: str, tmp_path):
    """``open_system`` for the contract: the same durable records every time, fresh DuckDB
    (so ``separate_engine`` needs nothing more here). A hand-moved clock is also the
    system's sleep: background waits end only when the case moves it."""
    place = InMemory() if kind == "memory" else tmp_path

    async def open_system(clock=None, separate_engine=False, **options):
        time = {"clock": clock, "sleep": clock.sleep} if clock else {}
        return await open_native_system(place, {"userId": "tester", **options}, **time)

    return open_system
