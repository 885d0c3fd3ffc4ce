"""A page that writes without pause, and the model that checks what survived it.

The page adds, edits, deletes and forks; before each operation it tells the test what it
is about to do (``intend``, awaited) and after the library resolved it, that it was
acknowledged (``ack``). The model then states what must hold after any reload, crash or
kill: every acknowledged message is there exactly once and in the order it was
acknowledged, unless a delete of it was begun; nothing appears that was never written;
an acknowledged edit holds (or a later one begun after it); the session list agrees with
the messages.
"""

import json
import random
from dataclasses import dataclass, field

from airi_memory_server.merge import merge

# Runs in the page after ``memory`` is booted: writes until ``window.stopWriting``.
WRITER = """async ({ seed, sessionIds, live, prefix }) => {
  let state = seed;
  const random = () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
  const pick = (list) => list[Math.floor(random() * list.length)];
  const alive = live.map((m) => ({ ...m }));  // {sessionId, id} of messages known to exist
  window.stopWriting = false;
  window.writing = (async () => {
    for (let n = 0; !window.stopWriting; n++) {
      const roll = random();
      const sessionId = pick(sessionIds);
      const mine = alive.filter((m) => m.sessionId === sessionId);
      if (roll < 0.75 || mine.length < 3) {
        const content = `${prefix}-${n}`;
        await window.intend(JSON.stringify({ kind: "add", sessionId, content }));
        const saved = await memory.sessions.addMessage(sessionId, { role: n % 2 ? "assistant" : "user", content });
        alive.push({ sessionId, id: saved.id });
        window.ack(JSON.stringify({ kind: "add", sessionId, content, id: saved.id }));
      } else if (roll < 0.87) {
        const target = pick(mine);
        const content = `${prefix}-${n}-edited`;
        await window.intend(JSON.stringify({ kind: "edit", sessionId, id: target.id, content }));
        await memory.sessions.updateMessage(sessionId, target.id, { content });
        window.ack(JSON.stringify({ kind: "edit", sessionId, id: target.id, content }));
      } else if (roll < 0.97) {
        const target = pick(mine);
        alive.splice(alive.indexOf(target), 1);
        await window.intend(JSON.stringify({ kind: "delete", sessionId, id: target.id }));
        await memory.sessions.deleteMessage(sessionId, target.id);
        window.ack(JSON.stringify({ kind: "delete", sessionId, id: target.id }));
      } else {
        const atIndex = Math.floor(random() * 3);
        const title = `${prefix}-fork-${n}`;
        await window.intend(JSON.stringify({ kind: "fork", sessionId, atIndex, title }));
        const fork = await memory.sessions.forkSession({ fromSessionId: sessionId, atIndex, title });
        window.ack(JSON.stringify({ kind: "fork", sessionId, atIndex, title, id: fork.sessionId }));
      }
    }
  })();
}"""

# Everything stored, as the library reads it back after a start.
READ_BACK = """async () => {
  const exported = await memory.exportSessions();
  const listed = await memory.sessions.getAllSessions();
  const totals = (await memory.analytics()).totals;
  const outbox = (await memory.storage.getItems(await memory.storage.getKeys('outbox'))).map((item) => item.value);
  return { sessions: exported.sessions, listed: listed.map((m) => m.sessionId), totals, outbox };
}"""


def check_outbox(stored: dict) -> int:
    """With sync recording from the first write and nothing sent, the outbox holds one
    operation per change ever made: merged by the protocol's reference merge, it must be
    exactly what is stored (no write without its operation, no operation without its
    write, whatever was cut short). Returns how many operations were checked."""
    merged = merge(stored["outbox"])
    sessions = {sid for sid, s in merged["sessions"].items() if not s["deleted"]}
    assert sessions == {s["meta"]["sessionId"] for s in stored["sessions"]}, "sessions vs outbox"
    for session in stored["sessions"]:
        sid = session["meta"]["sessionId"]
        fields = {k: v for k, v in session["meta"].items() if k != "sessionId"}
        assert merged["sessions"][sid]["fields"] == fields, f"session {sid} vs its operations"
        live = {
            mid: entry["fields"]
            for mid, entry in merged["messages"].get(sid, {}).items()
            if not entry["deleted"]
        }
        stored_messages = {
            m["id"]: {k: v for k, v in m.items() if k != "id"} for m in session["messages"]
        }
        assert live == stored_messages, f"messages of {sid} vs their operations"
    return len(stored["outbox"])


@dataclass
class Model:
    """What the page was acknowledged, and what it had begun."""

    acked_adds: dict[str, list[str]] = field(default_factory=dict)  # session -> ids, in order
    contents: dict[str, str] = field(default_factory=dict)  # id -> content written by add
    begun_adds: set[str] = field(default_factory=set)  # contents whose add began
    begun_deletes: set[str] = field(default_factory=set)
    edits: dict[str, list[tuple[str, bool]]] = field(default_factory=dict)  # id -> (content, acked)
    forks: dict[str, tuple[bool, int]] = field(default_factory=dict)  # title -> (acked, atIndex)
    acknowledged: int = 0

    def intend(self, text: str) -> None:
        op = json.loads(text)
        if op["kind"] == "add":
            self.begun_adds.add(op["content"])
        elif op["kind"] == "delete":
            self.begun_deletes.add(op["id"])
        elif op["kind"] == "edit":
            self.edits.setdefault(op["id"], []).append((op["content"], False))
        else:
            self.forks.setdefault(op["title"], (False, op["atIndex"]))

    def ack(self, text: str) -> None:
        op = json.loads(text)
        self.acknowledged += 1
        if op["kind"] == "add":
            self.acked_adds.setdefault(op["sessionId"], []).append(op["id"])
            self.contents[op["id"]] = op["content"]
        elif op["kind"] == "edit":
            history = self.edits[op["id"]]
            history[history.index((op["content"], False))] = (op["content"], True)
        elif op["kind"] == "fork":
            self.forks[op["title"]] = (True, op["atIndex"])

    def check(self, stored: dict, writing: set[str]) -> list[dict]:
        """Assert every rule on what the page read back; return the live messages
        (``{sessionId, id}``) of the ``writing`` sessions, for the next round's writer."""
        by_session = {s["meta"]["sessionId"]: s for s in stored["sessions"]}
        assert sorted(stored["listed"]) == sorted(by_session), "session list vs messages"
        total = sum(len(s["messages"]) for s in stored["sessions"])
        assert stored["totals"]["messages"] == total, "analytics vs messages"
        live = []
        for sid in writing:
            messages = by_session[sid]["messages"]
            ids = [m["id"] for m in messages]
            assert len(ids) == len(set(ids)), f"a message twice in {sid}"
            for message in messages:
                edited = {content for content, _ in self.edits.get(message["id"], [])}
                assert message["content"] in self.begun_adds | edited, f"never written: {message}"
                self._check_edit(message)
                live.append({"sessionId": sid, "id": message["id"]})
            acked = [i for i in self.acked_adds.get(sid, []) if i not in self.begun_deletes]
            missing = [self.contents[i] for i in acked if i not in ids]
            assert not missing, f"acknowledged and lost in {sid}: {missing}"
            positions = [ids.index(i) for i in acked]
            assert positions == sorted(positions), f"acknowledged out of order in {sid}"
        titles = {s["meta"]["title"]: s for s in stored["sessions"]}
        for title, (acked, at_index) in self.forks.items():
            if acked:
                assert title in titles, f"acknowledged fork lost: {title}"
            if title in titles:
                assert len(titles[title]["messages"]) == at_index, f"fork {title} changed"
        return live

    def _check_edit(self, message: dict) -> None:
        history = self.edits.get(message["id"], [])
        last_acked = max((i for i, (_, acked) in enumerate(history) if acked), default=None)
        if last_acked is None:
            return
        allowed = {content for content, _ in history[last_acked:]}
        assert message["content"] in allowed, f"acknowledged edit lost: {message}"


def pause(rng: random.Random) -> float:
    """How long the page writes before the test strikes, in seconds."""
    return rng.uniform(0.2, 1.5)
