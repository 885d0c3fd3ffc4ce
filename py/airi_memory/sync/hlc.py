"""Hybrid logical clock stamps: the order every device agrees on for edits (the page's
client and the sync server use this one module).

A stamp is ``<wall ms, 15 digits>-<counter, 5 digits>-<node id>``. The fixed widths make
plain string comparison (bytes, or JavaScript's ``<`` on these ASCII strings) the same
as comparing (wall, counter, node), so stamps sort and compare as strings everywhere.
"""

import re
from typing import NamedTuple

WALL_DIGITS = 15
COUNTER_DIGITS = 5
MAX_COUNTER = 10**COUNTER_DIGITS - 1
NODE_PATTERN = r"[A-Za-z0-9_-]{1,64}"
STAMP_RE = re.compile(rf"^(\d{{{WALL_DIGITS}}})-(\d{{{COUNTER_DIGITS}}})-({NODE_PATTERN})$")


class Stamp(NamedTuple):
    """One parsed stamp; tuples compare field by field, as the strings do."""

    wall_ms: int
    counter: int
    node: str

    def encode(self) -> str:
        """The wire form."""
        return f"{self.wall_ms:0{WALL_DIGITS}d}-{self.counter:0{COUNTER_DIGITS}d}-{self.node}"


def parse(text: str) -> Stamp:
    """The stamp ``text`` encodes; ValueError when it is not one."""
    match = STAMP_RE.match(text)
    if match is None:
        raise ValueError(f"not an HLC stamp: {text[:80]!r}")
    return Stamp(int(match.group(1)), int(match.group(2)), match.group(3))


def tick(previous: Stamp | None, now_ms: int, node: str) -> Stamp:
    """The stamp for a local edit: later than ``previous`` and not behind the wall clock."""
    if previous is None or now_ms > previous.wall_ms:
        return Stamp(now_ms, 0, node)
    return _bump(previous.wall_ms, previous.counter, node)


def receive(previous: Stamp | None, remote: Stamp, now_ms: int, node: str) -> Stamp:
    """The clock after seeing ``remote``: later than both, so the next edit orders after it."""
    latest = remote if previous is None or remote > previous else previous
    if now_ms > latest.wall_ms:
        return Stamp(now_ms, 0, node)
    same_wall = [s.counter for s in (previous, remote) if s and s.wall_ms == latest.wall_ms]
    return _bump(latest.wall_ms, max(same_wall), node)


def _bump(wall_ms: int, counter: int, node: str) -> Stamp:
    """The next counter at ``wall_ms``; past the counter's width, the next millisecond."""
    if counter >= MAX_COUNTER:
        return Stamp(wall_ms + 1, 0, node)
    return Stamp(wall_ms, counter + 1, node)
