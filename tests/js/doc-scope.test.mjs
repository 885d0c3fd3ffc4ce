// web/worker/doc-scope.mjs against a plain model of the same rows, on random adds, removes
// and filters. Run: node --test tests/js/
import assert from "node:assert/strict";
import { test } from "node:test";

import { createDocScope } from "../../web/worker/doc-scope.mjs";
import { randomSource } from "./random-source.mjs";

const ROLES = ["system", "user", "assistant", "tool", "error", "narrator"];
const SESSIONS = ["s1", "s2", "s3", "s4", "s5"];

/** What the scope should allow: the live rows' docs, ascending, that pass the filter. */
function modelAllowed(rows, sessions, roles, from, to) {
  return [...rows]
    .filter(([, row]) => sessions === null || sessions.includes(row.session))
    .filter(([, row]) => roles === null || roles.includes(row.role))
    .filter(([, row]) => from === null || (row.createdAt >= from && row.createdAt <= to))
    .map(([doc]) => doc)
    .sort((a, b) => a - b);
}

test("the docs allowed are the model's, through adds, removes and a clear", () => {
  const random = randomSource(11);
  const pick = (list) => list[Math.floor(random() * list.length)];
  const subset = (list) => list.filter(() => random() < 0.4);
  const scope = createDocScope();
  const rows = new Map();
  const removed = new Set();
  let next = 1;
  for (let round = 0; round < 60; round++) {
    if (round === 40) {
      scope.clear();
      rows.clear();
      removed.clear();
    }
    const count = Math.floor(random() * 200) + 1;
    const docs = Int32Array.from({ length: count }, () => next++);
    const sessionIds = Array.from(docs, () => pick(SESSIONS));
    const roles = Array.from(docs, () => pick(ROLES));
    const createdAt = BigInt64Array.from(docs, () => BigInt(1767225600000 + Math.floor(random() * 1e6)));
    scope.add(docs, sessionIds, roles, createdAt);
    docs.forEach((doc, i) => rows.set(doc, { session: sessionIds[i], role: roles[i], createdAt: Number(createdAt[i]) }));
    const doomed = Int32Array.from(subset([...rows.keys()]).slice(0, 30));
    scope.remove(doomed);
    for (const doc of doomed) {
      rows.delete(doc);
      removed.add(doc);
    }
    // A removed doc added again (a late add) stays removed.
    scope.add(doomed.subarray(0, 1), ["s1"], ["user"], [0]);
    assert.equal(scope.size, rows.size);
    for (let ask = 0; ask < 5; ask++) {
      const sessions = random() < 0.3 ? null : [...subset(SESSIONS), "never-seen"];
      const roles = random() < 0.3 ? null : subset(ROLES.slice(0, 5));
      const from = random() < 0.5 ? null : 1767225600000 + Math.floor(random() * 5e5);
      const to = from === null ? null : from + Math.floor(random() * 5e5);
      const allowed = scope.allowed(sessions, roles, from, to);
      assert.ok(allowed instanceof Int32Array);
      assert.deepEqual([...allowed], modelAllowed(rows, sessions, roles, from, to), `round ${round}`);
    }
  }
});

test("a role no filter can name is allowed only when roles are not filtered", () => {
  const scope = createDocScope();
  scope.add(Int32Array.of(1, 2), ["s", "s"], ["narrator", "user"], Float64Array.of(5, 5));
  assert.deepEqual([...scope.allowed(null, null, null, null)], [1, 2]);
  assert.deepEqual([...scope.allowed(null, ["user", "system"], null, null)], [2]);
  assert.deepEqual([...scope.allowed(["s"], [], null, null)], []);
  assert.deepEqual([...scope.allowed([], null, null, null)], []);
});
