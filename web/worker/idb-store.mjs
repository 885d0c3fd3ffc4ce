// IndexedDB records laid out as unstorage's indexedb driver lays them out (idb-keyval's
// database "keyval-store", store "keyval", key "<base>:<key>"), with one difference:
// listing and clearing work on a key range, so a mount never sees or wipes another's keys.
import { del, get, getMany, promisifyRequest, set, setMany } from "idb-keyval";

import { applyTo, Known, logKey } from "./idb-apply.mjs";

const prefixRange = (prefix) => IDBKeyRange.bound(prefix, `${prefix}\uffff`);

// idb-keyval's createStore, plus the transaction's durability: "strict" waits until the
// commit is flushed to disk, so a write resolved before an OS crash is still there after.
function createStore(dbName, storeName, durability) {
  const request = indexedDB.open(dbName);
  request.onupgradeneeded = () => request.result.createObjectStore(storeName);
  const database = promisifyRequest(request);
  return (mode, callback) =>
    database.then((db) => callback(db.transaction(storeName, mode, { durability }).objectStore(storeName)));
}

export function openStore(dbName, storeName, { durability = "strict" } = {}) {
  const store = createStore(dbName, storeName, durability);
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
