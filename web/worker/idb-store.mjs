// IndexedDB records laid out as unstorage's indexedb driver lays them out (idb-keyval's
// database "keyval-store", store "keyval", key "<base>:<key>"), with one difference:
// listing and clearing work on a key range, so a mount never sees or wipes another's keys.
import { createStore, del, get, getMany, promisifyRequest, set, setMany } from "idb-keyval";

const prefixRange = (prefix) => IDBKeyRange.bound(prefix, `${prefix}\uffff`);

export function openStore(dbName, storeName) {
  const store = createStore(dbName, storeName);
  return {
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
    // Prefix deletes, deletes, sets and JSON merge patches in ONE transaction: all of it
    // is stored, or none. A patch merges its fields into the stored JSON object.
    apply: (entries, keys, prefixes, patches = []) =>
      store("readwrite", (s) => {
        for (const prefix of prefixes) s.delete(prefixRange(prefix));
        for (const key of keys) s.delete(key);
        for (const [key, value] of entries) s.put(value, key);
        if (patches.length >= MANY_PATCHES) mergeFromRange(s, patches);
        else {
          for (const [key, patch] of patches) {
            const read = s.get(key);
            read.onsuccess = () => {
              const merged = mergeJsonObject(read.result, patch);
              if (merged !== undefined) s.put(merged, key);
            };
          }
        }
        return promisifyRequest(s.transaction);
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
    for (const [key, patch] of patches) {
      const merged = mergeJsonObject(stored.get(key), patch);
      if (merged !== undefined) s.put(merged, key);
    }
  };
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
