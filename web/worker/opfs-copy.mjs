// A second copy of an IndexedDB store, in the Origin Private File System, that fails
// independently of it. Chromium can delete an origin's whole IndexedDB at the second
// start after a crash (a torn LevelDB log record, then log reuse: docs/DESIGN-notes.md,
// "A crash can make Chromium delete the whole IndexedDB"); OPFS files are not in that
// LevelDB. Every committed write of the store is appended to this tab's log file and
// flushed before the write resolves; at the next start a store that is behind its copy
// is restored from it (idb-store.mjs).
//
// Order across tabs: every copied transaction also bumps a counter stored in the
// IndexedDB store itself (`CLOCK_KEY`), read and written inside that transaction, so a
// record's number is its place in IndexedDB's own commit order, whichever tab wrote it.
//
// Files, in `airi-memory-copy/<database>~<store>/`:
//   log-<tab>   records [u32 length][i32 crc32 of the rest][f64 number][msgpack ops],
//               one tab's each
//               (a sync access handle is exclusive: a tab that can open another's log
//               knows that tab is gone);
//   slot-0/1    the whole store as of one number (its "through"), written alternately:
//               the newer one is written whole before the older one is removed, so a
//               torn write leaves the older one: [magic][version][f64 through]
//               [u32 length][i32 crc32][msgpack [keys, values]].
// A slot is written when this tab's log and the logs of closed tabs pass
// `COMPACT_BYTES`: it covers every record numbered up to its "through", so this tab's
// log keeps only the records above it and closed tabs' logs are removed; other live tabs,
// told on a BroadcastChannel, drop the records it covers from their logs too.

import { decode, encode, ExtensionCodec } from "@msgpack/msgpack";
import CRC32 from "crc-32";

export const CLOCK_KEY = "airi-copy:clock"; // outside every mount's keys
const FOLDER = "airi-memory-copy";
const SLOTS = ["slot-0", "slot-1"];
const MAGIC = 0x41495243; // "AIRC"
const VERSION = 1;
const SLOT_HEADER = 24;
const RECORD_HEADER = 16;
const COMPACT_BYTES = 4 * 2 ** 20;
const MAX_CLOSED_LOGS = 16;
// After a delete, the copy is rewritten this long after the last one, so that what the
// user deleted does not stay in the copy's files much longer than in IndexedDB's.
const ERASE_AFTER_MS = 10_000;
// A file "erase-due-<log name>" is there while a tab's deletes wait for that slot: if the
// tab is gone first (closed, or killed), the next start finds it and writes the slot.
const ERASE_DUE = "erase-due-";
// Operations as recorded: [PUT, key, value], [DELETE, key],
// [DELETE_RANGE, lower, upper, lowerOpen, upperOpen], [CLEAR].
const PUT = 0;
const DELETE = 1;
const DELETE_RANGE = 2;
const CLEAR = 3;

// Values are what IndexedDB was given: mostly JSON text, bytes for vectors, and whatever
// an app stores raw. msgpack keeps text, numbers, objects and Uint8Array; other typed
// arrays and ArrayBuffers keep their type through these two extensions.
const codec = new ExtensionCodec();
codec.register({
  type: 1,
  encode: (value) =>
    ArrayBuffer.isView(value) && !(value instanceof Uint8Array)
      ? encode([value.constructor.name, new Uint8Array(value.buffer, value.byteOffset, value.byteLength)])
      : null,
  decode: (data) => {
    const [type, bytes] = decode(data);
    return new globalThis[type](bytes.slice().buffer);
  },
});
codec.register({
  type: 2,
  encode: (value) => (value instanceof ArrayBuffer ? new Uint8Array(value) : null),
  decode: (data) => data.slice().buffer,
});
const pack = (value) => encode(value, { extensionCodec: codec });
const unpack = (bytes) => decode(bytes, { extensionCodec: codec });

// Only with the facade's testHooks option: the next appends fail as a full disk would
// fail them, so a test can see the write stand and the copy rewritten.
let injectedFailures = 0;
export function failNextCopies(count = 1) {
  injectedFailures += count;
  return injectedFailures;
}

/** Tells the app (`onEvent`: the host's events) that the copy failed; its writes stand. */
export function tellCopyFailed(onEvent, error) {
  onEvent("storage-copy-failed", { message: String(error?.message ?? error) });
}

/** This tab's copy of a store, or null where OPFS's sync access handles are missing (a
 *  page's main thread: the library runs its store in a worker). */
export async function openCopy(dbName, storeName, scope = {}) {
  if (typeof FileSystemSyncAccessHandle === "undefined" || !navigator.storage?.getDirectory) return null;
  const root = await navigator.storage.getDirectory();
  const folder = await root.getDirectoryHandle(FOLDER, { create: true });
  const { name, lockName } = placeOf(dbName, storeName);
  const directory = await folder.getDirectoryHandle(name, { create: true });
  const copy = new Copy(directory, lockName, new Scope(scope));
  copy.log = await copy.newLog();
  copy.channel = new BroadcastChannel(lockName);
  copy.channel.onmessage = ({ data }) => {
    if (!Number.isFinite(data?.through)) return;
    copy.dropCovered(data.through).catch((error) => tellCopyFailed(copy.onEvent, error));
  };
  return copy;
}

/** A store's copy folder (in `FOLDER`) and the Web Lock its readers and writers share. */
function placeOf(dbName, storeName) {
  const name = `${encodeURIComponent(dbName)}~${encodeURIComponent(storeName)}`;
  return { name, lockName: `airi-memory-copy:${name}` };
}

// A terminated worker's sync access handles are let go a moment after its Web Locks are.
const REMOVE_TRIES = 50;
const REMOVE_RETRY_MS = 100;

/** Removes a store's copy, every file of it, under its lock; resolves to the number of
 *  files removed (0 when there was none). The caller makes sure no tab has the store
 *  open (erase.mjs): a live tab's log is held, and could not be removed. */
export async function removeCopy(dbName, storeName) {
  if (!navigator.storage?.getDirectory) return 0;
  const { name, lockName } = placeOf(dbName, storeName);
  return navigator.locks.request(lockName, async () => {
    const root = await navigator.storage.getDirectory();
    const folder = await root.getDirectoryHandle(FOLDER).catch(notFoundAsNull);
    const directory = await folder?.getDirectoryHandle(name).catch(notFoundAsNull);
    if (!directory) return 0;
    let files = 0;
    for await (const _ of directory.keys()) files += 1;
    for (let tries = 1; ; tries += 1) {
      try {
        await folder.removeEntry(name, { recursive: true });
        break;
      } catch (error) {
        if (error?.name !== "NoModificationAllowedError" || tries === REMOVE_TRIES) throw error;
        await new Promise((resolve) => setTimeout(resolve, REMOVE_RETRY_MS));
      }
    }
    const others = await folder.keys().next();
    if (others.done) await root.removeEntry(FOLDER).catch(() => {}); // a store's copy may be starting
    return files;
  });
}

function notFoundAsNull(error) {
  if (error?.name === "NotFoundError") return null;
  throw error;
}

class Copy {
  constructor(directory, lockName, scope) {
    this.directory = directory;
    this.lockName = lockName; // held while the copy is compared, restored or compacted
    this.scope = scope; // the keys copied
    this.log = null; // { name, handle }
    this.logBytes = 0;
    this.closedLogBytes = 0; // in closed tabs' logs, as last seen
    this.slotBytes = 0; // the newest slot's
    this.compacting = null;
    this.readStore = null; // set by the store: () => its copied records and clock
    this.onEvent = () => {}; // set by the store: its host's events
    this.erasing = null; // the timer of a compaction after deletes
    this.eraseMarked = false; // this tab's erase-due file is made (deletes since its read)
    this.channel = null; // the store's tabs' copies tell each other of new slots here
  }

  async newLog() {
    const name = `log-${crypto.randomUUID()}`;
    const file = await this.directory.getFileHandle(name, { create: true });
    return { name, handle: await file.createSyncAccessHandle() };
  }

  /** An object store for one readwrite transaction that records what is written through
   *  it, and numbers the transaction in `CLOCK_KEY` (read first, so every read made
   *  after it, and so every explicit commit, comes after the number is written). */
  recorder(objectStore) {
    const recording = { number: null, ops: [] };
    const clock = objectStore.get(CLOCK_KEY);
    clock.onsuccess = () => {
      recording.number = (Number.isSafeInteger(clock.result) ? clock.result : 0) + 1;
      objectStore.put(recording.number, CLOCK_KEY);
    };
    const wrapped = {
      put: (value, key) => {
        if (this.scope.holds(key)) recording.ops.push([PUT, key, value]);
        return objectStore.put(value, key);
      },
      delete: (query) => {
        if (query instanceof IDBKeyRange) {
          if (this.scope.meets(query.lower, query.upper)) {
            recording.ops.push([DELETE_RANGE, query.lower, query.upper, query.lowerOpen, query.upperOpen]);
          }
        } else if (this.scope.holds(query)) recording.ops.push([DELETE, query]);
        return objectStore.delete(query);
      },
      clear: () => {
        recording.ops.push([CLEAR]);
        return objectStore.clear();
      },
    };
    const store = new Proxy(objectStore, {
      get: (target, property) => {
        if (Object.hasOwn(wrapped, property)) return wrapped[property];
        const value = target[property];
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    return { store, recording };
  }

  /** A committed transaction's record, flushed to disk before its write resolves. */
  append({ number, ops }) {
    if (!ops.length) return;
    if (injectedFailures > 0 && injectedFailures--) throw new DOMException("injected by a test", "QuotaExceededError");
    const payload = pack(ops);
    const record = new Uint8Array(RECORD_HEADER + payload.length);
    const view = new DataView(record.buffer);
    view.setUint32(0, payload.length);
    view.setFloat64(8, number);
    record.set(payload, RECORD_HEADER);
    view.setInt32(4, CRC32.buf(record.subarray(8)));
    const { handle } = this.log;
    handle.write(record, { at: handle.getSize() });
    handle.flush();
    this.logBytes += record.length;
    if (this.pastDue(this.logBytes + this.closedLogBytes)) this.compactSoon();
    else if (ops.some(([kind]) => kind !== PUT)) {
      clearTimeout(this.erasing);
      this.erasing = setTimeout(() => this.compactSoon(), ERASE_AFTER_MS);
      this.markEraseDue();
    }
  }

  /** This tab's erase-due file, made once per slot (not awaited: a write resolves once
   *  its record is flushed; a crash in the moment before the file exists leaves the
   *  deleted records until a later slot, as before the files were kept). */
  markEraseDue() {
    if (this.eraseMarked) return;
    this.eraseMarked = true;
    this.directory
      .getFileHandle(ERASE_DUE + this.log.name, { create: true })
      .catch((error) => tellCopyFailed(this.onEvent, error));
  }

  /** Whether logs this long call for a slot: at least as long as the last slot, so a
   *  store is read whole once per its own size of writes (linear time as it grows). */
  pastDue(logBytes) {
    return logBytes > Math.max(COMPACT_BYTES, this.slotBytes);
  }

  compactSoon() {
    this.compacting ??= this.compact()
      .catch((error) => tellCopyFailed(this.onEvent, error))
      .finally(() => {
        this.compacting = null;
      });
    return this.compacting;
  }

  /** What the copy holds: its slots' headers, newest first, and every readable record
   *  (each log up to its first torn or damaged record) by number, its operations
   *  decoded only when asked (`ops`). */
  async state() {
    const records = new Map();
    for await (const [name, handle] of this.directory.entries()) {
      if (handle.kind !== "file" || !name.startsWith("log-")) continue;
      const bytes = name === this.log.name ? readOwn(this.log.handle) : await readFile(handle);
      for (const record of recordsOf(bytes)) records.set(record.number, record);
    }
    const slots = await this.slots();
    const sorted = [...records.values()].sort((a, b) => a.number - b.number);
    const newest = Math.max(slots[0]?.through ?? 0, sorted.at(-1)?.number ?? 0);
    return { slots, records: sorted, newest, present: Boolean(slots.length || sorted.length) };
  }

  /** The slots' headers that look whole, newest first (a slot is checked whole, its crc,
   *  only when it is read). */
  async slots() {
    const slots = [];
    for (const name of SLOTS) {
      const handle = await this.directory.getFileHandle(name).catch(notFoundAsNull);
      if (handle) slots.push(await slotOf(name, handle));
    }
    return slots.filter((slot) => slot.valid).sort((a, b) => b.through - a.through);
  }

  /** The newest slot that reads whole, as [its header, a Map of its records]; the other
   *  one if a crash tore the newest (its records are then still in the logs). */
  async slotContents(slots) {
    for (const slot of slots) {
      const bytes = await readFile(await this.directory.getFileHandle(slot.name));
      const payload = bytes.subarray(SLOT_HEADER, SLOT_HEADER + slot.length);
      if (CRC32.buf(payload) !== slot.crc) continue;
      const [keys, values] = unpack(payload);
      return [slot, new Map(keys.map((key, i) => [key, values[i]]))];
    }
    return [null, new Map()];
  }

  /** Writes a slot of the store as `readStore` finds it, then drops what it covers:
   *  this tab's records up to its number and closed tabs' logs. */
  async compact() {
    clearTimeout(this.erasing);
    const through = await navigator.locks.request(this.lockName, async () => {
      const closed = await this.claimClosedLogs(); // before the read: all of theirs is in it
      try {
        return await this.writeSlot(closed);
      } finally {
        for (const { handle } of closed) handle.close();
      }
    });
    this.channel?.postMessage({ through }); // other live tabs drop what it covers
  }

  /** The slot itself, and the logs it makes unneeded removed. */
  async writeSlot(closed) {
    const ownLog = this.log.name;
    this.eraseMarked = false; // a delete committed after the read below marks again
    const { through, keys, values } = await this.readStore();
    const [newest] = await this.slots(); // kept until the new one is whole
    const target = SLOTS.find((name) => name !== newest?.name);
    const payload = pack([keys, values]);
    this.slotBytes = payload.length;
    const header = new DataView(new ArrayBuffer(SLOT_HEADER));
    header.setUint32(0, MAGIC);
    header.setUint32(4, VERSION);
    header.setFloat64(8, through);
    header.setUint32(16, payload.length);
    header.setInt32(20, CRC32.buf(payload));
    const file = await this.directory.getFileHandle(target, { create: true });
    const slot = await file.createSyncAccessHandle();
    try {
      slot.truncate(0);
      slot.write(new Uint8Array(header.buffer), { at: 0 });
      slot.write(payload, { at: SLOT_HEADER });
      slot.flush();
    } finally {
      slot.close();
    }
    if (newest) await this.directory.removeEntry(newest.name); // superseded, and may hold deleted records
    await this.keepAbove(through);
    for (const { name, handle } of closed) {
      handle.close();
      await this.directory.removeEntry(name);
    }
    this.closedLogBytes = 0;
    await this.settleEraseMarks(ownLog);
    return through;
  }

  /** The erase-due files the slot just written settles: this tab's (unless a delete
   *  came after its read), and those of logs that are gone. Live tabs' stay. */
  async settleEraseMarks(ownLog) {
    const names = await this.names();
    for (const name of names) {
      const log = name.startsWith(ERASE_DUE) ? name.slice(ERASE_DUE.length) : null;
      if (log === null) continue;
      const own = log === ownLog || log === this.log.name;
      if (own ? !this.eraseMarked : !names.has(log)) {
        await this.directory.removeEntry(name).catch(notFoundAsNull);
      }
    }
  }

  async names() {
    const names = new Set();
    for await (const [name] of this.directory.entries()) names.add(name);
    return names;
  }

  /** This tab's records above `through` (a slot's number) moved to a new log, in one
   *  synchronous stretch once it is open: no append can come between the read and the
   *  switch. The old log, and what it held at or below `through`, is removed. */
  async keepAbove(through) {
    const fresh = await this.newLog();
    const old = this.log;
    const kept = recordsOf(readOwn(old.handle)).filter((record) => record.number > through);
    let at = 0;
    for (const { bytes } of kept) {
      fresh.handle.write(bytes, { at });
      at += bytes.length;
    }
    fresh.handle.flush();
    this.log = fresh;
    this.logBytes = at;
    old.handle.close();
    await this.directory.removeEntry(old.name);
  }

  /** Another tab wrote a slot through `through` (told on the copy's channel): this tab's
   *  records it covers leave this tab's log too, so what a delete removed leaves every
   *  live tab's files, not only the deleting tab's. */
  async dropCovered(through) {
    await navigator.locks.request(this.lockName, async () => {
      const [newest] = await this.slots();
      if (!newest || newest.through < through) return; // that slot is gone: keep all
      this.slotBytes = newest.length;
      if (recordsOf(readOwn(this.log.handle)).some((record) => record.number <= newest.through)) {
        await this.keepAbove(newest.through);
      }
    });
  }

  /** The logs of tabs that are gone (their exclusive handle can be taken), held open. */
  async claimClosedLogs() {
    const claimed = [];
    for await (const [name, handle] of this.directory.entries()) {
      if (!name.startsWith("log-") || name === this.log.name) continue;
      try {
        claimed.push({ name, handle: await handle.createSyncAccessHandle() });
      } catch {
        // another tab's, still open
      }
    }
    return claimed;
  }

  /** Closed tabs' empty logs removed, the others counted, and a compaction begun when
   *  they are many or large (every start reads them all), under the copy's lock. */
  tidySoon() {
    navigator.locks
      .request(this.lockName, () => this.tidyClosedLogs())
      .catch((error) => tellCopyFailed(this.onEvent, error));
  }

  async tidyClosedLogs() {
    let bytes = 0;
    let files = 0;
    const closed = await this.claimClosedLogs();
    for (const { name, handle } of closed) {
      const size = handle.getSize();
      handle.close();
      if (size === 0) await this.directory.removeEntry(name);
      else [bytes, files] = [bytes + size, files + 1];
    }
    this.closedLogBytes = bytes;
    const eraseDue = await this.eraseDue(new Set(closed.map(({ name }) => name)));
    if (eraseDue || this.pastDue(bytes) || files > MAX_CLOSED_LOGS) this.compactSoon();
  }

  /** Whether a tab deleted records and was gone before it wrote their slot: an erase-due
   *  file names a closed log, or a log no longer there. */
  async eraseDue(closed) {
    const names = await this.names();
    return [...names].some((name) => {
      const log = name.slice(ERASE_DUE.length);
      return name.startsWith(ERASE_DUE) && (closed.has(log) || !names.has(log));
    });
  }
}

/** The keys a copy holds: those under one of the `within` prefixes (every key, without
 *  any), except those under one of the `except` prefixes (derived records). */
export class Scope {
  constructor({ within = [], except = [] } = {}) {
    this.within = [...within].sort();
    this.except = [...except].sort();
  }

  holds(key) {
    const under = (prefix) => typeof key === "string" && key.startsWith(prefix);
    return (!this.within.length || this.within.some(under)) && !this.except.some(under);
  }

  /** Whether the keys from `lower` to `upper` (undefined: no bound) may hold one in
   *  scope: not when both lie under one `except` prefix, or outside every `within`. */
  meets(lower, upper) {
    const under = (key, prefix) => typeof key === "string" && key.startsWith(prefix);
    if (this.except.some((prefix) => under(lower, prefix) && under(upper, prefix))) return false;
    const reaches = (prefix) =>
      (lower === undefined || lower <= `${prefix}\uffff`) && (upper === undefined || upper >= prefix);
    return !this.within.length || this.within.some(reaches);
  }

  /** Key ranges that together hold exactly the keys in scope (for reading them all). */
  ranges() {
    const spans = this.within.length ? this.within.map((prefix) => [prefix, `${prefix}\uffff`]) : [[null, null]];
    const ranges = [];
    for (const [low, high] of spans) {
      let from = low; // the next range starts after this key (null: at the first key)
      let open = false;
      for (const prefix of this.except) {
        if ((low !== null && prefix < low) || (high !== null && prefix > high)) continue;
        ranges.push(between(from, prefix, open, true));
        [from, open] = [`${prefix}\uffff`, true];
      }
      ranges.push(between(from, high, open, false));
    }
    return ranges;
  }
}

function between(low, high, lowOpen, highOpen) {
  if (low === null && high === null) return undefined; // every key
  if (low === null) return IDBKeyRange.upperBound(high, highOpen);
  if (high === null) return IDBKeyRange.lowerBound(low, lowOpen);
  return IDBKeyRange.bound(low, high, lowOpen, highOpen);
}

/** A store's contents rebuilt from a copy's state: its slot, then its records above it. */
export async function contentsOf(copy, state) {
  const [slot, contents] = await copy.slotContents(state.slots);
  replay(contents, state.records, slot?.through ?? 0);
  return contents;
}

/** Applies records numbered above `after` to `target`: a Map, or an object store. */
export function replay(target, records, after) {
  const isMap = target instanceof Map;
  for (const { number, ops } of records) {
    if (number <= after) continue;
    for (const [kind, ...args] of ops) {
      if (kind === PUT) isMap ? target.set(args[0], args[1]) : target.put(args[1], args[0]);
      else if (kind === DELETE) target.delete(args[0]);
      else if (kind === CLEAR) target.clear();
      else if (kind === DELETE_RANGE) {
        const range = rangeOf(...args);
        if (!isMap) target.delete(range);
        else for (const key of [...target.keys()]) if (range.includes(key)) target.delete(key);
      }
    }
  }
}

function rangeOf(lower, upper, lowerOpen, upperOpen) {
  if (lower === undefined || lower === null) return IDBKeyRange.upperBound(upper, upperOpen);
  if (upper === undefined || upper === null) return IDBKeyRange.lowerBound(lower, lowerOpen);
  return IDBKeyRange.bound(lower, upper, lowerOpen, upperOpen);
}

/** A slot's header, valid when it is ours and the file is as long as it says. */
async function slotOf(name, handle) {
  const file = await handle.getFile();
  const bytes = new Uint8Array(await file.slice(0, SLOT_HEADER).arrayBuffer());
  if (bytes.length < SLOT_HEADER) return { name, valid: false };
  const view = new DataView(bytes.buffer);
  const length = view.getUint32(16);
  const valid = view.getUint32(0) === MAGIC && view.getUint32(4) === VERSION && file.size >= SLOT_HEADER + length;
  return { name, valid, through: view.getFloat64(8), length, crc: view.getInt32(20) };
}

/** A log's records up to the first one that is torn or damaged (a crash mid-append). */
function recordsOf(bytes) {
  const records = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  while (at + RECORD_HEADER <= bytes.length) {
    const end = at + RECORD_HEADER + view.getUint32(at);
    if (end > bytes.length || CRC32.buf(bytes.subarray(at + 8, end)) !== view.getInt32(at + 4)) break;
    const payload = bytes.subarray(at + RECORD_HEADER, end);
    records.push({
      number: view.getFloat64(at + 8),
      bytes: bytes.subarray(at, end),
      get ops() {
        return unpack(payload);
      },
    });
    at = end;
  }
  return records;
}

function readOwn(handle) {
  const bytes = new Uint8Array(handle.getSize());
  handle.read(bytes, { at: 0 });
  return bytes;
}

async function readFile(handle) {
  return new Uint8Array(await (await handle.getFile()).arrayBuffer());
}
