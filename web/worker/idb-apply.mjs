// One write of the session store as ONE IndexedDB transaction: guards, prefix deletes,
// deletes, sets, JSON merge patches and a log entry, all of it stored or none.
//
// Some writes depend on reads made inside the transaction: a guard's record, a record a
// patch merges into, the log's head and newest entry (the next number). Made the plain
// way, the writes wait for those reads: one more trip to IndexedDB's process before the
// commit, on every chat turn. A store remembers what it last read or wrote of those
// records (`Known`); when it knows every one a write depends on, the writes are sent
// together with the reads, computed from what it knows, and the transaction commits only
// if each read found exactly that (requests of one transaction run in the order made, so
// the reads see the store before these writes). Otherwise it is aborted, nothing of it
// stored, and made again the plain way. Either way the outcome is the plain way's: a
// write commits only on the inputs it was computed from, read in its own transaction.
//
// Another tab's write in between is what makes a guess stale; the journal's numbers stay
// gapless and in commit order because every append still reads the head it follows.

export const prefixRange = (prefix) => IDBKeyRange.bound(prefix, `${prefix}\uffff`);
const LOG_DIGITS = 16;
export const logKey = (prefix, number) => `${prefix}:${String(number).padStart(LOG_DIGITS, "0")}`;
// Only numbered entries: keys of an older layout under the prefix sort above the digits.
const logRange = (prefix) => IDBKeyRange.bound(logKey(prefix, 0), `${prefix}:${"9".repeat(LOG_DIGITS)}`);
// Many patches (retention archiving thousands of sessions): read the key range they
// span with two requests instead of one read per key, then write the merged records.
const MANY_PATCHES = 64;
const STALE = Symbol("stale");

// Only with the facade's testHooks option: the next commits fail as the browser fails
// them (a full disk: QuotaExceededError; AbortError), after their writes were made, so a
// test can see that none of them is kept.
const injectedFaults = [];
export function failNextCommits(name, count = 1) {
  for (let i = 0; i < count; i++) injectedFaults.push(name);
  return injectedFaults.length;
}

/** What one store last read or wrote of the records its writes depend on: patched
 *  records and log heads (text, or undefined when absent), and each log's newest key.
 *  Only a hint: a stale value costs an aborted try, never a wrong write. */
export class Known {
  constructor(limit = 1024) {
    this.limit = limit; // records remembered, the least recently used dropped first
    this.records = new Map();
    this.newest = new Map(); // log prefix -> newest entry's key (undefined: none)
    this.counts = { oneWave: 0, stale: 0, readFirst: 0 };
  }

  remember(key, value) {
    this.records.delete(key);
    this.records.set(key, value);
    if (this.records.size > this.limit) this.records.delete(this.records.keys().next().value);
  }

  /** Records another method of the store wrote or deleted (a key, or every key under a
   *  prefix, logs included). */
  forget(key, prefix = false) {
    this.records.delete(key);
    if (!prefix) return;
    for (const map of [this.records, this.newest]) {
      for (const known of [...map.keys()]) if (known.startsWith(key)) map.delete(known);
    }
  }
}

/** `apply(entries, keys, prefixes, patches, guards, log)` for a store opened with
 *  `store(mode, callback)` (idb-keyval's shape); resolves to the log entry's number. */
export function applyTo(store, known) {
  return async (entries, keys, prefixes, patches = [], guards = [], log = undefined) => {
    const write = { entries, keys, prefixes, patches, guards, log };
    const expected = expectation(write, known);
    if (expected) {
      const number = await store("readwrite", (s) => transact(s, write, known, expected));
      if (number !== STALE) {
        known.counts.oneWave += 1;
        return number;
      }
      known.counts.stale += 1;
    }
    known.counts.readFirst += 1;
    return store("readwrite", (s) => transact(s, write, known, null));
  };
}

/** What the reads of `write` will find, if `known` says: null when it cannot say, or
 *  when some write depends on another in the same transaction (read after it). */
function expectation({ entries, keys, prefixes, patches, log }, known) {
  if (prefixes.length || patches.length >= MANY_PATCHES) return null;
  const written = new Set([...keys, ...entries.map(([key]) => key)]);
  const records = new Map();
  for (const [key] of patches) {
    if (written.has(key) || !known.records.has(key)) return null;
    records.set(key, known.records.get(key));
  }
  if (log && !(known.records.has(log.head) && known.newest.has(log.prefix))) return null;
  return { records, head: log && known.records.get(log.head), newest: log && known.newest.get(log.prefix) };
}

function transact(s, { entries, keys, prefixes, patches, guards, log }, known, expected) {
  return new Promise((resolve, reject) => {
    let conflict = null;
    let injected = null;
    let stale = false;
    let appended = null;
    let pendingFault; // the fault a test injected into this commit
    let failure = null; // thrown while the writes were made
    // Every read comes first, in one wave: guards, and the records patched that nothing
    // else here writes (a second wave of reads, after the writes, cost each addMessage
    // another round of requests). A key is read once.
    const reads = new Map();
    const read = (key) => {
      if (!reads.has(key)) reads.set(key, s.get(key));
      return reads.get(key);
    };
    const checks = guards.map(([key, field, equals]) => [key, field, equals, read(key)]);
    const written = new Set([...keys, ...entries.map(([key]) => key)]);
    const patched = prefixes.length || patches.length >= MANY_PATCHES ? [] : patches.map(([key]) => key);
    const early = new Set(patched.filter((key) => !written.has(key)));
    for (const key of early) read(key);
    const head = log ? s.get(log.head) : null;
    // The newest entry there: a damaged or missing head must not number from 1 again.
    const newest = log ? s.openKeyCursor(logRange(log.prefix), "prev") : null;
    const puts = new Map(); // what this transaction leaves in the records read early

    const writeAll = (storedOf, headText, newestKey) => {
      for (const prefix of prefixes) s.delete(prefixRange(prefix));
      for (const key of keys) s.delete(key);
      for (const [key, value] of entries) s.put(value, key);
      if (patches.length >= MANY_PATCHES) mergeFromRange(s, patches);
      else {
        for (const [key, keyPatches] of patchesByKey(patches)) {
          if (early.has(key)) puts.set(key, mergeInto(s, key, storedOf(key), keyPatches));
          else {
            const later = s.get(key); // after the writes above, so it sees them
            later.onsuccess = () => mergeInto(s, key, later.result, keyPatches);
          }
        }
      }
      if (log) appended = appendToLog(s, log, parseHead(headText), newestKey);
      const fault = injectedFaults.shift();
      pendingFault = fault;
      if (fault) {
        // Requests complete in order: this read comes after every write above.
        s.count().onsuccess = () => {
          injected = new DOMException(`${fault} injected by a test`, fault);
          s.transaction.abort();
        };
      }
    };
    // A throw while writing (a value IndexedDB cannot clone) aborts the transaction, the
    // writes made before it included, and is the caller's error.
    const writeOrAbort = (...inputs) => {
      try {
        writeAll(...inputs);
        return true;
      } catch (error) {
        failure = error;
        s.transaction.abort();
        return false;
      }
    };
    const guardsHold = () => {
      const failed = checks.find(([, field, equals, request]) => !guardHolds(request.result, field, equals));
      if (failed) {
        conflict = failed[0];
        s.transaction.abort();
      }
      return !failed;
    };
    const readsDone = () => {
      for (const key of early) known.remember(key, reads.get(key).result);
      if (log) {
        known.remember(log.head, head.result);
        known.newest.set(log.prefix, newest.result?.key);
      }
      if (!expected) {
        if (guardsHold()) writeOrAbort((key) => reads.get(key).result, head?.result, newest?.result?.key);
        return;
      }
      const found =
        [...expected.records].every(([key, value]) => reads.get(key).result === value) &&
        (!log || (head.result === expected.head && newest.result?.key === expected.newest));
      if (!found) {
        stale = true;
        if (pendingFault) injectedFaults.unshift(pendingFault); // it is the next commit's
        s.transaction.abort();
        return;
      }
      // Only after a read: every request made before (the copy's clock read first of
      // all, opfs-copy.mjs) has had its success handler, and the writes those make.
      if (guardsHold() && !pendingFault && last) s.transaction.commit?.();
    };
    s.transaction.oncomplete = () => {
      for (const key of keys) known.forget(key);
      for (const prefix of prefixes) known.forget(prefix, true);
      if (patches.length >= MANY_PATCHES) for (const [key] of patches) known.forget(key);
      for (const [key] of entries) known.forget(key);
      for (const [key, value] of puts) known.remember(key, value);
      if (appended) {
        known.remember(log.head, appended.headText);
        known.newest.set(log.prefix, appended.newestKey);
      }
      resolve(appended?.number ?? undefined);
    };
    s.transaction.onabort = s.transaction.onerror = () => {
      if (stale) resolve(STALE);
      else if (failure) reject(failure);
      else if (conflict === null) reject(injected ?? s.transaction.error);
      else reject(Object.assign(new Error(conflict), { name: "WriteConflictError" }));
    };
    // The guess's writes go out now, behind the reads; the plain way's once they are in.
    if (expected && !writeOrAbort((key) => expected.records.get(key), expected.head, expected.newest)) return;
    // Requests of one transaction complete in the order they were made.
    const last = newest ?? [...reads.values()].at(-1);
    if (last) last.onsuccess = readsDone;
    else readsDone();
  });
}

// As Guard.holds in Python: no field means "exists"; a missing record or field is null.
function guardHolds(stored, field, equals) {
  if (field === null || field === undefined) return stored !== undefined;
  let value;
  try {
    value = typeof stored === "string" ? JSON.parse(stored) : undefined;
  } catch {
    value = undefined;
  }
  const found = value && typeof value === "object" ? (value[field] ?? null) : null;
  return found === (equals ?? null);
}

function parseHead(stored) {
  const head = { last: 0, pruned: 0 };
  try {
    const value = typeof stored === "string" ? JSON.parse(stored) : undefined;
    for (const name of Object.keys(head)) if (Number.isInteger(value?.[name])) head[name] = value[name];
  } catch {
    // a damaged head reads as an empty log; entries keep their numbers
  }
  return head;
}

/** The entry's number, the head written and the log's newest key after this append. */
function appendToLog(s, log, head, newestKey) {
  if (newestKey !== undefined) head.last = Math.max(head.last, Number(newestKey.slice(log.prefix.length + 1)));
  let prunedAll = false; // the prune took the newest entry too (so every entry)
  if (log.pruneThrough > head.pruned) {
    s.delete(IDBKeyRange.bound(`${log.prefix}:`, logKey(log.prefix, log.pruneThrough)));
    head.pruned = log.pruneThrough;
    prunedAll = newestKey !== undefined && newestKey <= logKey(log.prefix, log.pruneThrough);
  }
  let added;
  if (log.entry !== null && log.entry !== undefined) {
    head.last += 1;
    added = logKey(log.prefix, head.last);
    s.put(log.entry, added);
  }
  const headText = JSON.stringify(head);
  s.put(headText, log.head);
  return { number: head.last, headText, newestKey: added ?? (prunedAll ? undefined : newestKey) };
}

function mergeFromRange(s, patches) {
  const keys = patches.map(([key]) => key).sort();
  const range = IDBKeyRange.bound(keys[0], keys.at(-1));
  const storedKeys = s.getAllKeys(range);
  const storedValues = s.getAll(range);
  storedValues.onsuccess = () => {
    const stored = new Map(storedKeys.result.map((key, i) => [key, storedValues.result[i]]));
    for (const [key, keyPatches] of patchesByKey(patches)) mergeInto(s, key, stored.get(key), keyPatches);
  };
}

/** Patches grouped by key, each key's in the order given. */
function patchesByKey(patches) {
  const grouped = new Map();
  for (const [key, patch] of patches) {
    const keyPatches = grouped.get(key);
    if (keyPatches) keyPatches.push(patch);
    else grouped.set(key, [patch]);
  }
  return grouped;
}

/** A record's patches applied in order, each onto what the one before left, and the
 *  result written once; a missing or non-object record is left alone. Returns what the
 *  record holds after. */
function mergeInto(s, key, stored, keyPatches) {
  let merged = stored;
  for (const patch of keyPatches) merged = mergeJsonObject(merged, patch) ?? merged;
  if (merged !== stored) s.put(merged, key);
  return merged;
}

function mergeJsonObject(stored, patch) {
  if (typeof stored !== "string") return undefined;
  let current;
  try {
    current = JSON.parse(stored);
  } catch {
    return undefined;
  }
  if (!current || typeof current !== "object" || Array.isArray(current)) return undefined;
  return JSON.stringify({ ...current, ...parsedPatch(patch) });
}

// Retention sends one patch text for thousands of keys: parse it once.
let lastPatch = { text: null, value: null };
function parsedPatch(text) {
  if (lastPatch.text !== text) lastPatch = { text, value: JSON.parse(text) };
  return lastPatch.value;
}
