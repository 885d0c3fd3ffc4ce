// Erasing everything the library stored in one IndexedDB store: its mounts' records, the
// copy's clock, and the store's second copy in OPFS (opfs-copy.mjs). Other code's records
// in the same store (AIRI's own unstorage uses the same default names) stay.
//
// Only with no memory system open on the store, in any tab: a live tab would write its
// records back, and its copy's log cannot be removed. Each open store holds the store's
// Web Lock in shared mode (`holdOpen`) for as long as its worker lives; erasing takes it
// exclusively, so a tab that starts meanwhile waits until the erase is done.
import { promisifyRequest } from "idb-keyval";

import { prefixRange } from "./idb-apply.mjs";
import { CLOCK_KEY, removeCopy } from "./opfs-copy.mjs";

// A tab's lock outlives its memory.close() by the moment its worker takes to end.
const ERASE_WAIT_MS = 5000;

const openLockName = (dbName, storeName) =>
  `airi-memory-open:${encodeURIComponent(dbName)}~${encodeURIComponent(storeName)}`;

/** Resolves once this context holds the store's open lock (shared with other tabs'), kept
 *  until the context ends; at once where Web Locks are missing (Node's tests). */
export function holdOpen(dbName, storeName) {
  if (!globalThis.navigator?.locks) return Promise.resolve();
  return new Promise((held) => {
    navigator.locks.request(openLockName(dbName, storeName), { mode: "shared" }, () => {
      held();
      return new Promise(() => {}); // never let go: the worker's end lets go of it
    });
  });
}

/** Erases the store's records under `bases` (each `<base>:...`), its clock and its copy;
 *  resolves to `{records, copyFiles}`: how many of each were removed. */
export async function eraseStore(dbName, storeName, bases) {
  const signal = AbortSignal.timeout(ERASE_WAIT_MS);
  try {
    return await navigator.locks.request(openLockName(dbName, storeName), { signal }, async () => {
      // The copy first: a copy left behind a store already erased would restore it all
      // at the next start, while a store left behind an erased copy only gets a new copy.
      const copyFiles = await removeCopy(dbName, storeName);
      return { records: await deleteRecords(dbName, storeName, bases), copyFiles };
    });
  } catch (error) {
    if (error?.name !== "TimeoutError" || !signal.aborted) throw error;
    throw Object.assign(
      new Error(
        `the memory system is open on IndexedDB "${dbName}" / "${storeName}" in this or another ` +
          `tab (still after ${ERASE_WAIT_MS / 1000} s): close it there (memory.close()) before erasing; ` +
          "nothing was erased",
      ),
      { name: "MemoryInUseError" },
    );
  }
}

/** The records under `bases` and the clock deleted in one strict transaction; how many. */
async function deleteRecords(dbName, storeName, bases) {
  const request = indexedDB.open(dbName);
  request.onupgradeneeded = () => request.result.createObjectStore(storeName); // as idb-store.mjs
  const db = await promisifyRequest(request);
  try {
    if (!db.objectStoreNames.contains(storeName)) return 0;
    const transaction = db.transaction(storeName, "readwrite", { durability: "strict" });
    const store = transaction.objectStore(storeName);
    const ranges = bases.map((base) => prefixRange(`${base}:`));
    const counts = ranges.map((range) => promisifyRequest(store.count(range)));
    for (const range of ranges) store.delete(range);
    store.delete(CLOCK_KEY);
    const [counted] = await Promise.all([Promise.all(counts), promisifyRequest(transaction)]);
    return counted.reduce((sum, count) => sum + count, 0);
  } finally {
    db.close();
  }
}
