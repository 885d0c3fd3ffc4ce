// IndexedDB records laid out as unstorage's indexedb driver lays them out (idb-keyval's
// database "keyval-store", store "keyval", key "<base>:<key>"), with one difference:
// listing and clearing work on a key range, so a mount never sees or wipes another's keys.
import { del, get, getMany, promisifyRequest, set, setMany } from "idb-keyval";

const prefixRange = (prefix) => IDBKeyRange.bound(prefix, `${prefix}\uffff`);
const LOG_DIGITS = 16;
const logKey = (prefix, number) => `${prefix}:${String(number).padStart(LOG_DIGITS, "0")}`;

// idb-keyval's createStore, plus the transaction's durability: "strict" waits until the
// commit is flushed to disk, so a write resolved before an OS crash is still there after.
function createStore(dbName, storeName, durability) {
  const request = indexedDB.open(dbName);
  request.onupgradeneeded = () => request.result.createObjectStore(storeName);
  const database = promisifyRequest(request);
  return (mode, callback) =>
    database.then((db) => callback(db.transaction(storeName, mode, { durability }).objectStore(storeName)));
}

// Only with the facade's testHooks option: the next commits fail as the browser fails
// them (a full disk: QuotaExceededError; AbortError), after their writes were made, so a
// test can see that none of them is kept.
const injectedFaults = [];
export function failNextCommits(name, count = 1) {
  for (let i = 0; i < count; i++) injectedFaults.push(name);
  return injectedFaults.length;
}

export function openStore(dbName, storeName, { durability = "strict" } = {}) {
  const store = createStore(dbName, storeName, durability);
  const methods = {
    async has(key) {
      return (await get(key, store)) !== undefined;
    },
    // Missing records are undefined, which Python sees as None (null would be jsnull).
    get: async (key) => (await get(key, store)) ?? undefined,
    getMany: async (keys) => (await getMany(keys, store)).map((value) => value ?? undefined),
    set: (key, value) => set(key, value, store),
    // One transaction: every entry is written, or none is.
    setMany: (entries) => setMany(entries, store),
    delete: (key) => del(key, store),
    // Guards, prefix deletes, deletes, sets, JSON merge patches and a log entry in ONE
    // transaction: all of it is stored, or none. A patch merges its fields into the
    // stored JSON object. Guards are read first; if one fails, the transaction is aborted
    // before anything was written and the error names its key (WriteConflictError). The
    // log entry takes the next number from the head record read inside the transaction:
    // writes to one store commit one at a time, so numbers follow commit order.
    apply: (entries, keys, prefixes, patches = [], guards = [], log = undefined) =>
      store("readwrite", (s) => {
        const done = new Promise((resolve, reject) => {
          let conflict = null;
          let injected = null;
          let number = null;
          // Every read comes first, in one wave: guards, and the records patched that
          // nothing else here writes (a second wave of reads, after the writes, cost each
          // addMessage another round of requests). A key is read once.
          const reads = new Map();
          const read = (key) => {
            if (!reads.has(key)) reads.set(key, s.get(key));
            return reads.get(key);
          };
          const checks = guards.map(([key, field, equals]) => [key, field, equals, read(key)]);
          const written = new Set([...keys, ...entries.map(([key]) => key)]);
          const early = prefixes.length || patches.length >= MANY_PATCHES ? [] : patches;
          for (const [key] of early) if (!written.has(key)) read(key);
          const head = log ? s.get(log.head) : null;
          // The newest entry there: a damaged or missing head must not number from 1 again.
          const newest = log ? s.openKeyCursor(logRange(log.prefix), "prev") : null;
          const write = () => {
            const failed = checks.find(([, field, equals, read]) => !guardHolds(read.result, field, equals));
            if (failed) {
              conflict = failed[0];
              s.transaction.abort();
              return;
            }
            for (const prefix of prefixes) s.delete(prefixRange(prefix));
            for (const key of keys) s.delete(key);
            for (const [key, value] of entries) s.put(value, key);
            if (patches.length >= MANY_PATCHES) mergeFromRange(s, patches);
            else {
              for (const [key, keyPatches] of patchesByKey(patches)) {
                if (reads.has(key) && !written.has(key) && !prefixes.length) {
                  mergeInto(s, key, reads.get(key).result, keyPatches);
                } else {
                  const later = s.get(key); // after the writes above, so it sees them
                  later.onsuccess = () => mergeInto(s, key, later.result, keyPatches);
                }
              }
            }
            if (log) number = appendToLog(s, log, parseHead(head.result), newest.result?.key);
            const fault = injectedFaults.shift();
            if (fault) {
              // Requests complete in order: this read comes after every write above.
              s.count().onsuccess = () => {
                injected = new DOMException(`${fault} injected by a test`, fault);
                s.transaction.abort();
              };
            }
          };
          // Requests of one transaction complete in the order they were made.
          const last = newest ?? [...reads.values()].at(-1);
          if (last) last.onsuccess = write;
          else write();
          s.transaction.oncomplete = () => resolve(number ?? undefined);
          s.transaction.onabort = s.transaction.onerror = () => {
            if (conflict === null) reject(injected ?? s.transaction.error);
            else reject(Object.assign(new Error(conflict), { name: "WriteConflictError" }));
          };
        });
        return done;
      }),
    // A log's head and its entries numbered above `after`, in one transaction.
    readLog: (prefix, headKey, after) =>
      store("readonly", async (s) => {
        const range = IDBKeyRange.bound(logKey(prefix, after + 1), `${prefix}:\uffff`);
        const [head, keys, values] = await Promise.all([
          promisifyRequest(s.get(headKey)),
          promisifyRequest(s.getAllKeys(range)),
          promisifyRequest(s.getAll(range)),
        ]);
        return { head, keys, values };
      }),
    // Keys and values under a prefix, read in one transaction, in key order.
    getAll: (prefix) =>
      store("readonly", async (s) => {
        const range = prefix ? prefixRange(prefix) : undefined;
        const [keys, values] = await Promise.all([
          promisifyRequest(s.getAllKeys(range)),
          promisifyRequest(s.getAll(range)),
        ]);
        return { keys, values };
      }),
    keys: (prefix) =>
      store("readonly", (s) => promisifyRequest(s.getAllKeys(prefix ? prefixRange(prefix) : undefined))),
    clear: (prefix) =>
      store("readwrite", (s) => {
        if (prefix) s.delete(prefixRange(prefix));
        else s.clear();
        return promisifyRequest(s.transaction);
      }),
  };
  return Object.fromEntries(
    Object.entries(methods).map(([name, method]) => [name, (...args) => method(...args).catch(rethrowPlain)]),
  );
}

// Chromium rejects a full disk's commit with a QuotaExceededError that is its own class
// now (with `quota` and `requested`), and Pyodide 314 never delivers that rejection to
// the awaiting Python: the write, and the queue behind it, would wait forever. Python
// needs only the name and the message, as a plain Error.
function rethrowPlain(error) {
  throw Object.assign(new Error(String(error?.message ?? error)), { name: String(error?.name ?? "Error") });
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

// Only numbered entries: keys of an older layout under the prefix sort above the digits.
const logRange = (prefix) => IDBKeyRange.bound(logKey(prefix, 0), `${prefix}:${"9".repeat(LOG_DIGITS)}`);

function appendToLog(s, log, head, newestKey) {
  if (newestKey !== undefined) head.last = Math.max(head.last, Number(newestKey.slice(log.prefix.length + 1)));
  if (log.pruneThrough > head.pruned) {
    s.delete(IDBKeyRange.bound(`${log.prefix}:`, logKey(log.prefix, log.pruneThrough)));
    head.pruned = log.pruneThrough;
  }
  if (log.entry !== null && log.entry !== undefined) {
    head.last += 1;
    s.put(log.entry, logKey(log.prefix, head.last));
  }
  s.put(JSON.stringify(head), log.head);
  return head.last;
}

// Many patches (retention archiving thousands of sessions): read the key range they
// span with two requests instead of one read per key, then write the merged records.
const MANY_PATCHES = 64;
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
 *  result written once; a missing or non-object record is left alone. */
function mergeInto(s, key, stored, keyPatches) {
  let merged = stored;
  for (const patch of keyPatches) merged = mergeJsonObject(merged, patch) ?? merged;
  if (merged !== stored) s.put(merged, key);
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
