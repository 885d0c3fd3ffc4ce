// IndexedDB records laid out as unstorage's indexedb driver lays them out (idb-keyval's
// database "keyval-store", store "keyval", key "<base>:<key>"), with one difference:
// listing and clearing work on a key range, so a mount never sees or wipes another's keys.
import { del, get, getMany, promisifyRequest, set, setMany } from "idb-keyval";

import { holdOpen } from "./erase.mjs";
import { applyTo, Known, logKey, prefixRange } from "./idb-apply.mjs";
import { CLOCK_KEY, contentsOf, openCopy, replay, tellCopyFailed } from "./opfs-copy.mjs";

// idb-keyval's createStore, plus:
// - the transaction's durability: "strict" waits until the commit is flushed to disk, so
//   a write resolved before an OS crash is still there after;
// - with `copy` (where OPFS allows it: a worker), a second copy in OPFS (opfs-copy.mjs):
//   every committed readwrite transaction is appended to it before it resolves, and the
//   store is compared with it, and restored from it if behind, before its first use.
//   A store with a copy is a memory system's: it holds the store's open lock while its
//   worker lives (erase.mjs), and waits for an erase in progress before its first use.
function createStore(dbName, storeName, { durability, copy: wanted, copied = {}, onEvent = () => {} }) {
  const opened = (async () => {
    const request = indexedDB.open(dbName);
    request.onupgradeneeded = () => request.result.createObjectStore(storeName);
    // The database opens while the lock is asked for (5-10 ms at a start); nothing is
    // read from it, and the copy's files are not touched, before the lock is held.
    const [db, copy] = await Promise.all([
      promisifyRequest(request),
      wanted
        ? holdOpen(dbName, storeName).then(() =>
            openCopy(dbName, storeName, copied).catch((error) => copyFailed(error, onEvent)),
          )
        : null,
    ]);
    if (copy) {
      copy.readStore = () => readCopied(db, storeName, copy.scope);
      copy.onEvent = onEvent;
      await reconcile(db, storeName, copy, onEvent);
    }
    return { db, copy };
  })();
  return (mode, callback) =>
    opened.then(({ db, copy }) => {
      const transaction = db.transaction(storeName, mode, { durability });
      const objectStore = transaction.objectStore(storeName);
      if (mode !== "readwrite" || !copy) return callback(objectStore);
      let committed = false; // registered before the callback's own handlers: seen first
      transaction.addEventListener("complete", () => {
        committed = true;
      });
      const { store, recording } = copy.recorder(objectStore);
      return Promise.resolve(callback(store)).then((result) => {
        if (committed) appendOrResync(copy, recording, onEvent);
        return result;
      });
    });
}

/** No copy for this tab (OPFS refused its files): the store works on, and the app is told. */
function copyFailed(error, onEvent) {
  tellCopyFailed(onEvent, error);
  return null;
}

/** A committed write's record into the copy. The write is stored in IndexedDB whatever
 *  happens here, so a failure is told (and the copy rewritten whole), not thrown. */
function appendOrResync(copy, recording, onEvent) {
  try {
    copy.append(recording);
  } catch (error) {
    copyFailed(error, onEvent);
    copy.compactSoon();
  }
}

/** The store against its copy, under the copy's lock (one tab at a time): restored from
 *  the copy when the copy is ahead (Chromium deleted the store after a crash: its
 *  clock is gone), the copy rewritten when the store is ahead (a write committed but
 *  not yet appended when its tab died, or a store older than its copy). The copy is read
 *  before the clock: a live tab appends only what is committed, so a copy ahead of the
 *  clock read after it is a store that lost writes, never a tab in mid-write. */
async function reconcile(db, storeName, copy, onEvent) {
  await navigator.locks.request(copy.lockName, async () => {
    for (;;) {
      const state = await copy.state();
      copy.slotBytes = state.slots[0]?.length ?? 0;
      const [clock, firstKeys] = await readonly(db, storeName, (s) => [s.get(CLOCK_KEY), s.getAllKeys(null, 1)]);
      if (state.present && (clock === undefined || clock < state.newest)) {
        if (await restore(db, storeName, copy, state, clock, onEvent)) return;
      } else if (state.present ? clock > state.newest : firstKeys.length > 0) {
        copy.compactSoon(); // once this lock is let go
        return;
      } else {
        copy.tidySoon(); // once this lock is let go: not on the way to the first read
        return;
      }
    }
  });
}

/** Writes the copy's records back into the store in one transaction, if its clock is
 *  still `clock` (else false: another tab wrote meanwhile, and the caller looks again). */
async function restore(db, storeName, copy, state, clock, onEvent) {
  const whole = clock === undefined || (state.slots[0]?.through ?? 0) > clock;
  const contents = whole ? await contentsOf(copy, state) : null;
  const transaction = db.transaction(storeName, "readwrite", { durability: "strict" });
  const s = transaction.objectStore(storeName);
  const check = s.get(CLOCK_KEY);
  let unchanged = false;
  check.onsuccess = () => {
    unchanged = check.result === clock;
    if (!unchanged) return;
    if (whole) for (const [key, value] of contents) s.put(value, key);
    else replay(s, state.records, clock);
    s.put(state.newest, CLOCK_KEY);
  };
  await promisifyRequest(transaction);
  if (unchanged) onEvent("storage-restored", { records: whole ? contents.size : null, from: clock ?? null, through: state.newest });
  return unchanged;
}

/** What the copy holds of the store: every record in its scope (the clock aside), with
 *  the clock, read in one transaction. */
async function readCopied(db, storeName, scope) {
  const ranges = scope.ranges();
  const reads = await readonly(db, storeName, (s) => [
    s.get(CLOCK_KEY),
    ...ranges.flatMap((range) => [s.getAllKeys(range), s.getAll(range)]),
  ]);
  const keys = [];
  const values = [];
  for (let i = 1; i < reads.length; i += 2) {
    reads[i].forEach((key, j) => {
      if (key === CLOCK_KEY) return;
      keys.push(key);
      values.push(reads[i + 1][j]);
    });
  }
  return { through: reads[0] ?? 0, keys, values };
}

/** The results of the requests `make` makes in one readonly transaction. */
function readonly(db, storeName, make) {
  const requests = make(db.transaction(storeName, "readonly").objectStore(storeName));
  return Promise.all(requests.map(promisifyRequest));
}

export function openStore(dbName, storeName, options = {}) {
  const store = createStore(dbName, storeName, { durability: "strict", ...options });
  const known = new Known(); // what apply's next write may take as read
  const methods = {
    async has(key) {
      return (await get(key, store)) !== undefined;
    },
    // Missing records are undefined, which Python sees as None (null would be jsnull).
    get: async (key) => (await get(key, store)) ?? undefined,
    getMany: async (keys) => (await getMany(keys, store)).map((value) => value ?? undefined),
    set: (key, value) => {
      known.forget(key);
      return set(key, value, store);
    },
    // One transaction: every entry is written, or none is.
    setMany: (entries) => {
      for (const [key] of entries) known.forget(key);
      return setMany(entries, store);
    },
    delete: (key) => {
      known.forget(key);
      return del(key, store);
    },
    // Guards, prefix deletes, deletes, sets, JSON merge patches and a log entry in ONE
    // transaction (idb-apply.mjs): all of it is stored, or none.
    apply: applyTo(store, known),
    // How this store's writes went: in one wave of requests, or reads first.
    writeCounts: async () => ({ ...known.counts }),
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
        known.forget(prefix ?? "", true);
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
