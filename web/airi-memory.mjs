// airi-memory: the one module a page imports.
//
//   const { createMemorySystem } = await import("/airi-memory.mjs");
//   const memory = await createMemorySystem({ userId: "alice" });
//   await memory.storage.setItem("local:notes/1", { text: "hi" });
//
// Python (Pyodide) runs in a Web Worker; every method here posts one message to it and
// resolves with plain JS values. Errors raised in Python reject with an Error whose
// `name` is the Python exception type and whose `message` is the Python message.

// close() waits this long past timeouts.closeMs (Python's own bound on finishing queued
// writes) for the worker's answer, then ends the worker regardless.
const CLOSE_GRACE_MS = 2000;
const DEFAULT_CLOSE_MS = 10_000;

/**
 * @param {{userId?: string, baseUrl?: string|URL, context?: object, retention?: object,
 *   summarizer?: object, models?: object, cache?: object, timeouts?: object,
 *   testHooks?: boolean}} [options]
 *   `summarizer.summarize` may be a function ({messages, model}) => Promise<string>.
 *   `testHooks: true` adds `_test` (crash an inner worker, block the worker): tests only.
 */
export async function createMemorySystem(options = {}) {
  const { baseUrl, testHooks = false, ...rest } = options;
  if (typeof testHooks !== "boolean") throw new TypeError("the testHooks option must be true or false");
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
  const events = new EventTarget();
  const rpc = connect(worker, events, appFunctions);
  let info;
  try {
    info = await rpc.send({ kind: "boot", options: pythonOptions, testHooks });
  } catch (error) {
    worker.terminate();
    throw error;
  }
  const ready = performance.now() - started;
  const call = (method, ...args) => rpc.send({ kind: "call", method, args });
  const sessions = createSessionsFacade(call, info.activeSessionId);
  const closeMs = (Number(rest.timeouts?.closeMs) || DEFAULT_CLOSE_MS) + CLOSE_GRACE_MS;
  let closing = null;

  return {
    /** "change" events: another tab wrote sessions/messages; detail.sessionIds names them.
     *  "quarantine" events: records found unreadable after start-up, detail.records
     *  [{key, reason}] (those found at start-up are in `quarantined`). */
    addEventListener: events.addEventListener.bind(events),
    removeEventListener: events.removeEventListener.bind(events),
    /** Milliseconds from createMemorySystem() to ready. */
    ready,
    userId: info.userId,
    versions: {
      ...info.versions,
      pyodide: info.buildInfo.pyodide,
      duckdbWasm: info.buildInfo.duckdbWasm,
    },
    /** Milliseconds the worker spent booting Pyodide, the wheel and DuckDB-WASM. */
    bootMs: info.bootMs,
    /** When each part of boot finished (ms since boot began): pyodide, packages, duckdb, python. */
    bootPhases: info.bootPhases,
    mounts: info.mounts,
    /** Records start-up could not read ([{key, reason}]): kept where they are, untouched,
     *  left out of every read; sessions.stats().quarantined has the current list. */
    quarantined: info.quarantined,
    storage: {
      getItem: (key) => call("storage.getItem", key),
      getItemRaw: (key) => call("storage.getItemRaw", key),
      getItems: (keys) => call("storage.getItems", keys),
      // As in unstorage, setting undefined removes the item.
      setItem: (key, value) =>
        value === undefined ? call("storage.removeItem", key) : call("storage.setItem", key, value),
      setItemRaw: (key, value) => call("storage.setItemRaw", key, value),
      setItems: (items) => call("storage.setItems", items),
      hasItem: (key) => call("storage.hasItem", key),
      removeItem: (key) => call("storage.removeItem", key),
      getKeys: (base = "") => call("storage.getKeys", base),
      clear: (base = "") => call("storage.clear", base),
      getMounts: () => call("storage.getMounts"),
    },
    sessions,
    /** Working memory for the next LLM call (the seed's context store). */
    context: {
      /** {sourceType, sourceId, content, strategy: 'replace-self'|'append-self', priority?, expiresAt?} */
      ingestContext: (message) => call("context.ingest", message),
      /** {"module:datetime": {...}, ...}: highest priority first, expired entries gone. */
      getContextsSnapshot: () => call("context.snapshot"),
      getContexts: () => call("context.entries"),
      removeContext: (sourceType, sourceId) => call("context.remove", sourceType, sourceId ?? null),
      clearContexts: () => call("context.clear"),
      /** `provide()` is called right before each composeMessages; it returns an object or null. */
      registerProvider: (sourceType, provide) => {
        appFunctions.set(`context:${sourceType}`, provide);
        return call("context.registerProvider", sourceType);
      },
      unregisterProvider: (sourceType) => {
        appFunctions.delete(`context:${sourceType}`);
        return call("context.unregisterProvider", sourceType);
      },
      setUserProfile: (profile) => call("context.setUserProfile", profile ?? null),
      getUserProfile: () => call("context.getUserProfile"),
      setModuleState: (module, state) => call("context.setModuleState", module, state ?? null),
    },
    /**
     * The messages for the next LLM call within a token budget, and how they were chosen:
     * options {model | maxTokens, reserveTokens?, encoding?, systemPrompt?,
     * contextPlacement?: 'after-system'|'last-user'|'none', includeSummary?}.
     */
    composeMessages: (sessionId, composeOptions = {}) => call("composeMessages", sessionId, composeOptions),
    /**
     * The seed's future search: {query, limit, threshold, filters: {sessionIds, characterIds,
     * dateRange, roles}, strategy?: 'hybrid'|'relevant'|'keyword'|'semantic'|'recent'}.
     * Results: {sessionId, session, message, score, scores, retrievers, matchedTerms}.
     */
    search: (query) => call("search", query),
    /** The seed's searchMessages: case-insensitive substring, [{sessionId, message}]. */
    searchMessages: (query, searchOptions = {}) => call("searchMessages", query, searchOptions),
    /** Embedding state: {provider, model, state, indexed, pending, ratePerSecond, ...}. */
    embeddingsStatus: () => call("embeddings.status"),
    /** Embed what is pending now (the way to index when backgroundIndexing is false). */
    indexEmbeddings: () => call("embeddings.indexNow"),
    /** Another embedding model or provider: {provider: 'local'|'openai'|'custom'|'none', ...}. */
    configureEmbeddings: (config) => call("configureEmbeddings", withoutFunction(config ?? {}, appFunctions)),
    /** Token counts of texts: 'estimate' (the seed's), 'o200k_base' or 'cl100k_base' (exact). */
    countTokens: (texts, encoding = "estimate") => call("countTokens", texts, encoding),
    tokenStats: () => call("tokens.stats"),
    /** The seed's session retention; the policy defaults to the one in the options. */
    applyRetentionPolicy: (policy) => call("applyRetentionPolicy", policy ?? null),
    applyMessageRetention: (sessionId, policy) => call("applyMessageRetention", sessionId, policy ?? null),
    retention: {
      status: () => call("retention.status"),
      start: (runNow = false) => call("retention.start", runNow),
      stop: () => call("retention.stop"),
    },
    /** Summarise all but the last `threshold` turns into one stored system message. */
    summarizeOldContext: (sessionId, threshold = 50) => call("summarizeOldContext", sessionId, threshold),
    /** {provider: 'openai', baseUrl, model, apiKey, timeoutMs} or {provider: 'callback', summarize}; null removes. */
    configureSummarizer: (config) =>
      call("configureSummarizer", config ? withoutFunction(config, appFunctions) : null),
    summarizerStatus: () => call("summarizer.status"),
    /** JSON Schema of ChatSessionMeta, ChatHistoryItem and CacheConfig (camelCase). */
    schemas: () => call("schemas"),
    /** Messages per day / role / session / character, totals and estimated tokens. */
    analytics: () => call("analytics"),
    /** The seed's envelope: {version: '1.0.0', exportedAt, sessions: [{meta, messages}]}. */
    exportSessions: (sessionIds) => call("exportSessions", sessionIds ?? null),
    /** Seed or AIRI (chat-sessions-index:v1) files; all or nothing. Options: {keepIds}. */
    importSessions: (data, options = {}) => call("importSessions", data, options),
    /** navigator.storage.estimate(): {usage, quota} in bytes, where the browser tells. */
    estimateStorage: async () => (await navigator.storage?.estimate?.()) ?? { usage: null, quota: null },
    /** Ask the browser not to evict our IndexedDB data; resolves to whether it agreed. */
    requestPersistence: async () => (await navigator.storage?.persist?.()) ?? false,
    /** Read-only SQL for diagnostics; parameters are bound, never formatted in. */
    query: (sql, params = []) => call("query", sql, params),
    info: () => call("info"),
    ping: () => call("ping"),
    /** Benchmark tools, refused unless the system was created with `diagnostics: true`. */
    diagnostics: {
      bulkInsert: (rows) => call("diagnostics.bulkInsert", rows),
      /** Random vectors for every message without one (benchmarks of a big store). */
      fillVectors: () => call("diagnostics.fillVectors"),
    },
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
          rpc.close();
          worker.terminate();
        }
      })();
      return closing;
    },
    ...(testHooks && {
      /** Tests only (the testHooks option): faults on request. */
      _test: {
        /** "duckdb" | "embedder": that worker is terminated, with the error event of a
         *  crash, once it has a call in flight (waiting for one up to 10 s / 30 s). */
        crash: (target) => rpc.send({ kind: "test", action: "crash", target }),
        /** The worker's thread is kept busy for `ms`: it answers nothing meanwhile. */
        block: (ms) => rpc.send({ kind: "test", action: "block", ms }),
        /** The next `count` IndexedDB commits fail with the DOMException `name`
         *  ("QuotaExceededError", "AbortError", ...) after their writes were made. */
        failCommits: (name, count = 1) => rpc.send({ kind: "test", action: "failCommits", name, count }),
      },
    }),
  };
}

// The seed's session store names. Every method resolves once its write is durable.
function createSessionsFacade(call, initialActiveSessionId) {
  const names = [
    "createSession", "getSession", "listSessions", "getAllSessions", "renameSession",
    "pinSession", "tagSession", "archiveSession", "unarchiveSession", "deleteSession",
    "deleteOldSessions", "addMessage", "updateMessage", "deleteMessage",
    "loadSessionMessages", "getSessionMessages", "latestMessages",
    "persistSessionMessages", "forkSession", "getActiveSessionId", "stats", "snapshot", "sync",
  ];
  const facade = Object.fromEntries(names.map((name) => [name, (...args) => call(`sessions.${name}`, ...args)]));
  let active = initialActiveSessionId ?? null;
  facade.getActiveSessionId = async (characterId = "default") => {
    const id = await call("sessions.getActiveSessionId", characterId);
    if (characterId === "default") active = id;
    return id;
  };
  facade.setActiveSessionId = async (sessionId) => {
    const id = await call("sessions.setActiveSessionId", sessionId);
    active = id;
    return id;
  };
  // The seed assigns `sessionStore.activeSessionId = id`; the write is queued and its
  // promise kept in `activeSessionIdSaved` for callers who want to wait or catch.
  Object.defineProperty(facade, "activeSessionId", {
    enumerable: true,
    get: () => active,
    set: (sessionId) => {
      active = sessionId;
      facade.activeSessionIdSaved = facade.setActiveSessionId(sessionId);
    },
  });
  /** Messages one by one, fetched from the worker in batches (50 by default). */
  facade.streamMessages = async function* streamMessages(sessionId, { batchSize = 50 } = {}) {
    for (let offset = 0; ; offset += batchSize) {
      const batch = await call("sessions.messagesPage", sessionId, offset, batchSize);
      yield* batch;
      if (batch.length < batchSize) return;
    }
  };
  return facade;
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
