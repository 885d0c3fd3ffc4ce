// The copy's scope: the keys it records, and the key ranges a compaction reads, must be
// the same set, or a slot would miss records (or hold derived ones).
import assert from "node:assert/strict";
import { test } from "node:test";

// IndexedDB's key ranges over string keys (Node has no IndexedDB): enough for `includes`.
globalThis.IDBKeyRange = {
  bound: (lower, upper, lowerOpen = false, upperOpen = false) => range(lower, upper, lowerOpen, upperOpen),
  lowerBound: (lower, open = false) => range(lower, undefined, open, false),
  upperBound: (upper, open = false) => range(undefined, upper, false, open),
};
function range(lower, upper, lowerOpen, upperOpen) {
  return {
    includes: (key) =>
      (lower === undefined || (lowerOpen ? key > lower : key >= lower)) &&
      (upper === undefined || (upperOpen ? key < upper : key <= upper)),
  };
}

const { Scope } = await import("../../web/worker/opfs-copy.mjs");

const KEYS = [
  "",
  "airi-copy:clock",
  "airi-local",
  "airi-local:",
  "airi-local:memory:sessions:s1",
  "airi-local:memory:snapshot",
  "airi-local:memory:snapshot:v5:covers",
  "airi-local:memory:snapshots-not",
  "airi-local:memory:snapshoT",
  "airi-local:memory:vectors:0001",
  "airi-local:zzz",
  "airi-sync-queue:op:1",
  "airi-sync-queue",
  "chat-sessions-index:v1", // AIRI's own records in the same database
  "zzz",
];

function inRanges(scope, key) {
  return scope.ranges().some((r) => r === undefined || r.includes(key));
}

test("the ranges a compaction reads hold exactly the keys the copy records", () => {
  const scopes = [
    { within: ["airi-local:", "airi-sync-queue:"], except: ["airi-local:memory:snapshot"] },
    { within: [], except: ["airi-local:memory:snapshot", "airi-local:memory:vectors"] },
    { within: ["airi-local:"], except: [] },
    {},
  ];
  for (const options of scopes) {
    const scope = new Scope(options);
    for (const key of KEYS) assert.equal(inRanges(scope, key), scope.holds(key), `${JSON.stringify(options)} ${key}`);
  }
});

test("the library's scope: its mounts' records, not the snapshots or another app's", () => {
  const scope = new Scope({ within: ["airi-local:", "airi-sync-queue:"], except: ["airi-local:memory:snapshot"] });
  const held = KEYS.filter((key) => scope.holds(key));
  assert.deepEqual(held, [
    "airi-local:",
    "airi-local:memory:sessions:s1",
    "airi-local:memory:snapshoT",
    "airi-local:memory:vectors:0001",
    "airi-local:zzz",
    "airi-sync-queue:op:1",
  ]);
});

test("a range delete is recorded unless it cannot touch a key in scope", () => {
  const scope = new Scope({ within: ["airi-local:", "airi-sync-queue:"], except: ["airi-local:memory:snapshot:"] });
  const snapshots = ["airi-local:memory:snapshot:", "airi-local:memory:snapshot:\uffff"];
  assert.equal(scope.meets(...snapshots), false); // the old snapshots removed
  assert.equal(scope.meets("chat:", "chat:\uffff"), false); // another app's records
  assert.equal(scope.meets("airi-local:memory:messages:s1", "airi-local:memory:messages:s1\uffff"), true);
  assert.equal(scope.meets("airi-local:memory:journal:", "airi-local:memory:journal:0000000000000009"), true);
  assert.equal(scope.meets(undefined, "b"), true); // spans the mounts
  assert.equal(scope.meets("b", undefined), false); // above them
  assert.equal(new Scope({}).meets("x", "y"), true);
});
