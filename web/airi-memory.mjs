// airi-memory: the one module a page imports.
//
//   const { createMemorySystem } = await import("/airi-memory.mjs");
//   const memory = await createMemorySystem({ userId: "alice" });
//   await memory.storage.setItem("local:notes/1", { text: "hi" });
//
// Or, to render at once: `const memory = openMemorySystem(options)`: calls made before
// `await memory.whenReady` are queued. Python (Pyodide) runs in a Web Worker; each method
// (generated from Python's method table into airi-memory-methods.mjs; the few written
// here do page-side work too) posts one message to it and resolves with plain JS values. Errors raised in Python reject with an Error whose
// `name` is the Python exception type and whose `message` is the Python message.

import { METHODS, STORED } from "./airi-memory-methods.mjs";

// close() waits this long past timeouts.closeMs (Python's own bound on finishing queued
// writes) for the worker's answer, then ends the worker regardless.
const CLOSE_GRACE_MS = 2000;
const DEFAULT_CLOSE_MS = 10_000;

/**
 * The memory system, once it is ready (`memory.ready`: milliseconds it took): the sessions
 * are read, and listing them, the app's storage and context answer at once. Calls that
 * need the history (messages, search, writes) wait until start-up has loaded it into
 * DuckDB, a moment later: `memory.whenLoaded` says when.
 * @param {import("./airi-memory.d.ts").MemorySystemOptions} [options]
 * @returns {Promise<import("./airi-memory.d.ts").MemorySystem>}
 */
export async function createMemorySystem(options = {}) {
  return openMemorySystem(options).whenReady;
}

/**
 * The memory system at once, while it boots: calls made before it is ready are queued
 * and sent, in order, once boot is done; if boot fails they reject with boot's error.
 * `whenReady` resolves with the same object, its boot fields (`ready`, `userId`,
 * `versions` ...) set. `onProgress({phase, fraction, elapsedMs})` follows boot (also a
 * "boot-progress" event): fractions grow to 1.
 * `summarizer.summarize` may be a function ({messages, model}) => Promise<string>;
 * `embeddings.embed` one ({texts, model}) => Promise<number[][]>.
 * `testHooks: true` adds `_test` (crash an inner worker, block the worker): tests only.
 * `startupSnapshot: true` (experimental) restores Python from a snapshot made at build time.
 * @param {import("./airi-memory.d.ts").MemorySystemOptions} [options]
 * @returns {import("./airi-memory.d.ts").OpeningMemorySystem}
 */
export function openMemorySystem(options = {}) {
  const { baseUrl, testHooks = false, startupSnapshot = false, onProgress, ...rest } = options;
  if (typeof testHooks !== "boolean") throw new TypeError("the testHooks option must be true or false");
  if (typeof startupSnapshot !== "boolean") {
    throw new TypeError("the startupSnapshot option must be true or false");
  }
  if (onProgress !== undefined && typeof onProgress !== "function") {
    throw new TypeError("the onProgress option must be a function");
  }
  const appFunctions = new Map(); // what Python may call on this page, by name
  const pythonOptions = {
    ...rest,
    context: { timezone: Intl.DateTimeFormat().resolvedOptions().timeZone, ...rest.context },
  };
  if (rest.summarizer) pythonOptions.summarizer = withoutFunction(rest.summarizer, appFunctions);
  if (rest.embeddings) pythonOptions.embeddings = withoutFunction(rest.embeddings, appFunctions);
  const distUrl = new URL(baseUrl ?? "./", import.meta.url);
  const started = performance.now();
  const worker = new Worker(new URL("runtime/worker.mjs", distUrl), {
    type: "module",
    name: "airi-memory",
  });
  // The sync runner waits while offline; a worker's own online/offline events miss some
  // ways a browser goes offline (DevTools' emulation), so the page tells it too.
  const tellNetwork = () => worker.postMessage({ network: { online: globalThis.navigator?.onLine ?? true } });
  tellNetwork();
  globalThis.addEventListener?.("online", tellNetwork);
  globalThis.addEventListener?.("offline", tellNetwork);
  const events = new EventTarget();
  if (onProgress) events.addEventListener("boot-progress", (event) => onProgress(event.detail));
  const rpc = connect(worker, events, appFunctions);
  const booting = rpc.send({ kind: "boot", options: pythonOptions, testHooks, startupSnapshot });
  let booted = false;
  // Before boot is done a call waits on it (its reaction runs after the one below that
  // marks the system booted, so queued calls keep their order); after, it goes at once.
  const send = (method, args) => rpc.send({ kind: "call", method, args });
  const call = (method, ...args) => (booted ? send(method, args) : booting.then(() => send(method, args)));
  const closeMs = (Number(rest.timeouts?.closeMs) || DEFAULT_CLOSE_MS) + CLOSE_GRACE_MS;
  let closing = null;

  const memory = generatedMethods(call);
  const active = trackActiveSession(memory.sessions, call);
  const handWritten = {
    /** "change" events: another tab wrote sessions/messages; detail.sessionIds names them.
     *  "quarantine" events: records found unreadable after start-up, detail.records
     *  [{key, reason}] (those found at start-up are in `quarantined`).
     *  "boot-progress" events: {phase, fraction, elapsedMs} while booting.
     *  "embedding-progress" events: the local model loading, and indexing. */
    addEventListener: events.addEventListener.bind(events),
    removeEventListener: events.removeEventListener.bind(events),
    // As in unstorage, setting undefined removes the item.
    "storage.setItem": (key, value) =>
      value === undefined ? call("storage.removeItem", key) : call("storage.setItem", key, value),
    /** `provide()` is called right before each composeMessages; it returns an object or null. */
    "context.registerProvider": (sourceType, provide) => {
      appFunctions.set(`context:${sourceType}`, provide);
      return call("context.registerProvider", sourceType);
    },
    "context.unregisterProvider": (sourceType) => {
      appFunctions.delete(`context:${sourceType}`);
      return call("context.unregisterProvider", sourceType);
    },
    /** {provider: 'local'|'openai'|'custom'|'none', ...}; 'custom' takes `embed`. */
    configureEmbeddings: (config) => call("configureEmbeddings", withoutFunction(config ?? {}, appFunctions)),
    /** {provider: 'openai', baseUrl, model, apiKey, timeoutMs} or {provider: 'callback', summarize}; null removes. */
    configureSummarizer: (config) =>
      call("configureSummarizer", config ? withoutFunction(config, appFunctions) : null),
    /** Messages one by one, fetched from the worker in batches (50 by default). */
    "sessions.streamMessages": async function* streamMessages(sessionId, { batchSize = 50 } = {}) {
      for (let offset = 0; ; offset += batchSize) {
        const batch = await call("sessions.messagesPage", sessionId, offset, batchSize);
        yield* batch;
        if (batch.length < batchSize) return;
      }
    },
    /** navigator.storage.estimate(): {usage, quota} in bytes, where the browser tells. */
    estimateStorage: async () => (await navigator.storage?.estimate?.()) ?? { usage: null, quota: null },
    /** Ask the browser not to evict our IndexedDB data; resolves to whether it agreed. */
    requestPersistence: async () => (await navigator.storage?.persist?.()) ?? false,
    /**
     * Lets queued writes finish (up to timeouts.closeMs, 10 s by default), then ends the
     * worker and its DuckDB and model workers, answering or not: resolves within that
     * bound plus two seconds. Calls still waiting, and every later call, reject with
     * MemoryClosedError.
     */
    close() {
      closing ??= (async () => {
        let timer;
        const waited = new Promise((resolve) => {
          timer = setTimeout(resolve, closeMs);
        });
        try {
          await Promise.race([rpc.send({ kind: "close" }), waited]);
        } finally {
          clearTimeout(timer);
          globalThis.removeEventListener?.("online", tellNetwork);
          globalThis.removeEventListener?.("offline", tellNetwork);
          rpc.close();
          worker.terminate();
        }
      })();
      return closing;
    },
  };
  if (testHooks) {
    Object.assign(handWritten, {
      /** "duckdb" | "embedder": that worker is terminated, with the error event of a
       *  crash, once it has a call in flight (waiting for one up to 10 s / 30 s). */
      "_test.crash": (target) => rpc.send({ kind: "test", action: "crash", target }),
      /** The worker's thread is kept busy for `ms`: it answers nothing meanwhile. */
      "_test.block": (ms) => rpc.send({ kind: "test", action: "block", ms }),
      /** The next `count` IndexedDB commits fail with the DOMException `name`
       *  ("QuotaExceededError", "AbortError", ...) after their writes were made. */
      "_test.failCommits": (name, count = 1) => rpc.send({ kind: "test", action: "failCommits", name, count }),
      /** The next `count` appends to the store's second copy (OPFS) fail, after the
       *  commit they follow. */
      "_test.failCopies": (count = 1) => rpc.send({ kind: "test", action: "failCopies", count }),
    });
  }
  for (const [path, member] of Object.entries(handWritten)) setPath(memory, path, member);

  memory.whenReady = booting.then(
    (info) => {
      booted = true;
      active.started(info.activeSessionId);
      return Object.assign(memory, {
        /** Milliseconds from openMemorySystem() to ready. */
        ready: performance.now() - started,
        userId: info.userId,
        versions: { ...info.versions, pyodide: info.buildInfo.pyodide, duckdbWasm: info.buildInfo.duckdbWasm },
        /** Milliseconds the worker spent booting Pyodide, the wheel and DuckDB-WASM. */
        bootMs: info.bootMs,
        /** When each part of boot finished (ms since boot began): pyodide, imports, duckdb, python. */
        bootPhases: info.bootPhases,
        /** The startupSnapshot option's outcome: "off", "used", or "failed: <why>" (then
         *  Python booted as usual). */
        startupSnapshot: info.startupSnapshot,
        mounts: info.mounts,
        /** Records start-up could not read ([{key, reason}]): kept where they are, untouched,
         *  left out of every read; sessions.stats().quarantined has the current list. */
        quarantined: info.quarantined,
        /** Set when IndexedDB was found behind its second copy (OPFS) and restored from
         *  it at this start: {records, from, through}; null otherwise. */
        restored: info.restored,
      });
    },
    (error) => {
      worker.terminate();
      throw error;
    },
  );
  memory.whenReady.catch(() => {}); // an app that only makes calls learns of it from them
  memory.whenLoaded = memory.whenReady
    .then(() => rpc.send({ kind: "loaded" }))
    .then((info) =>
      Object.assign(memory, {
        /** Milliseconds from openMemorySystem() to loaded: the history is in DuckDB. */
        loaded: performance.now() - started,
        versions: { ...memory.versions, duckdb: info.versions.duckdb },
        bootPhases: info.bootPhases,
        quarantined: info.quarantined, // the message records' too, now
      }),
    );
  memory.whenLoaded.catch(() => {});
  return memory;
}

/**
 * Erases everything the library stored in this browser for this origin: sessions,
 * messages, summaries, vectors, the app's `local:` values, the sync outbox, and the
 * second copy (OPFS). Other code's records in the same IndexedDB store stay. It needs
 * every memory system of the origin closed (`memory.close()`, in every tab): otherwise it
 * rejects with MemoryInUseError, erasing nothing. A system opened meanwhile waits for it.
 * Records already synced stay on the sync server, and come back at the next sync.
 * @param {{ baseUrl?: string | URL }} [options]
 * @returns {Promise<import("./airi-memory.d.ts").ErasedMemory>}
 */
export async function eraseMemorySystem({ baseUrl } = {}) {
  const worker = new Worker(new URL("runtime/worker.mjs", new URL(baseUrl ?? "./", import.meta.url)), {
    type: "module",
    name: "airi-memory-erase",
  });
  const rpc = connect(worker, new EventTarget(), new Map());
  try {
    return await rpc.send({ kind: "erase", stored: STORED });
  } finally {
    rpc.close();
    worker.terminate();
  }
}

// One forwarder per entry of the generated method map, nested by path
// ("sessions.addMessage" -> memory.sessions.addMessage). Leading required parameters are
// always sent (missing ones as null, which Python reads as None); optional ones only up
// to the last one given, so Python's own defaults apply to the rest.
function generatedMethods(call) {
  const memory = {};
  for (const [name, { required }] of Object.entries(METHODS)) {
    setPath(memory, name, (...args) => {
      let count = args.length;
      while (count > required && args[count - 1] === undefined) count -= 1;
      const sent = args.slice(0, count);
      while (sent.length < required) sent.push(null);
      return call(name, ...sent);
    });
  }
  return memory;
}

function setPath(target, path, value) {
  const parts = path.split(".");
  const last = parts.pop();
  for (const part of parts) target = target[part] ??= {};
  target[last] = value;
}

// The seed assigns `sessionStore.activeSessionId = id`; the write is queued and its
// promise kept in `activeSessionIdSaved` for callers who want to wait or catch.
function trackActiveSession(sessions, call) {
  let active = null;
  let assigned = false; // by the app before boot was done: boot's value is older
  const remember = (id) => {
    active = id;
    assigned = true;
    return id;
  };
  sessions.getActiveSessionId = async (characterId = "default") => {
    const id = await call("sessions.getActiveSessionId", characterId);
    if (characterId === "default") remember(id);
    return id;
  };
  sessions.setActiveSessionId = async (sessionId) => remember(await call("sessions.setActiveSessionId", sessionId));
  sessions.activeSessionIdSaved = undefined;
  Object.defineProperty(sessions, "activeSessionId", {
    enumerable: true,
    get: () => active,
    set: (sessionId) => {
      remember(sessionId);
      sessions.activeSessionIdSaved = sessions.setActiveSessionId(sessionId);
    },
  });
  return {
    started(initial) {
      if (!assigned) active = initial ?? null;
    },
  };
}

// An app's own summariser (`summarize`) or embedder (`embed`) stays on the page; Python
// gets the rest of the configuration and calls the function by name.
function withoutFunction({ summarize, embed, ...config }, appFunctions) {
  if (typeof summarize === "function") appFunctions.set("summarize", summarize);
  if (typeof embed === "function") appFunctions.set("embed", embed);
  return config;
}

// Python asked for one of the app's functions: run it, send back its JSON or its error.
async function runAppCall(worker, appFunctions, { appCall, name, payload }) {
  try {
    const fn = appFunctions.get(name);
    if (!fn) throw new Error(`the app registered no function ${JSON.stringify(name)}`);
    const value = await fn(JSON.parse(payload));
    worker.postMessage({ appReply: appCall, ok: true, json: JSON.stringify(value ?? null) });
  } catch (error) {
    worker.postMessage({ appReply: appCall, ok: false, message: String(error?.message ?? error) });
  }
}

// Above every bound the core sets on input (128 levels for stored values), far below the
// depths at which copying to the worker or Pyodide's conversion exhausts a stack (a few
// thousand levels): there the call would be lost without an answer.
const MAX_ARGUMENT_DEPTH = 200;

/** Whether arrays and plain objects in `value` nest deeper than `limit`; no recursion. */
function nestsDeeperThan(value, limit) {
  const stack = [[value, 0]];
  while (stack.length) {
    const [item, depth] = stack.pop();
    if (item === null || typeof item !== "object" || ArrayBuffer.isView(item)) continue;
    if (depth > limit) return true;
    for (const child of Array.isArray(item) ? item : Object.values(item)) {
      if (child !== null && typeof child === "object") stack.push([child, depth + 1]);
    }
  }
  return false;
}

function connect(worker, events, appFunctions) {
  const pending = new Map();
  let nextId = 0;
  let closedError = null;
  const failAll = (error) => {
    closedError = error;
    for (const { reject } of pending.values()) reject(error);
    pending.clear();
  };
  worker.onmessage = ({ data }) => {
    if (data.appCall) {
      runAppCall(worker, appFunctions, data);
      return;
    }
    if (data.event) {
      events.dispatchEvent(new CustomEvent(data.event, { detail: data.detail }));
      return;
    }
    const entry = pending.get(data.id);
    if (!entry) return;
    pending.delete(data.id);
    const reply = data.json === undefined ? data : JSON.parse(data.json);
    if (reply.ok) entry.resolve(reply.value);
    else entry.reject(toError(reply.error));
  };
  worker.onerror = (event) => {
    event.preventDefault?.();
    failAll(new Error(`airi-memory worker failed: ${event.message ?? "unknown error"}`));
  };
  return {
    send(message) {
      if (closedError) return Promise.reject(closedError);
      if (nestsDeeperThan(message.args, MAX_ARGUMENT_DEPTH)) {
        const why = `they are nested more than ${MAX_ARGUMENT_DEPTH} levels deep`;
        return Promise.reject(
          Object.assign(new Error(`the arguments of ${message.method} cannot be sent to the worker: ${why}`), {
            name: "InvalidValueError",
          }),
        );
      }
      const id = ++nextId;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        try {
          worker.postMessage({ id, ...message });
        } catch (error) {
          pending.delete(id); // arguments the browser cannot copy (DataCloneError)
          reject(error);
        }
      });
    },
    close() {
      failAll(Object.assign(new Error("airi-memory is closed"), { name: "MemoryClosedError" }));
    },
  };
}

function toError({ name, message, detail }) {
  const error = new Error(message);
  error.name = name;
  if (detail) error.detail = detail;
  return error;
}
