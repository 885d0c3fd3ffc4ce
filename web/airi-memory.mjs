// airi-memory: the one module a page imports.
//
//   const { createMemorySystem } = await import("/airi-memory.mjs");
//   const memory = await createMemorySystem({ userId: "alice" });
//   await memory.storage.setItem("local:notes/1", { text: "hi" });
//
// Python (Pyodide) runs in a Web Worker; every method here posts one message to it and
// resolves with plain JS values. Errors raised in Python reject with an Error whose
// `name` is the Python exception type and whose `message` is the Python message.

/** @param {{userId?: string, baseUrl?: string|URL}} [options] */
export async function createMemorySystem(options = {}) {
  const { baseUrl, ...pythonOptions } = options;
  const distUrl = new URL(baseUrl ?? "./", import.meta.url);
  const started = performance.now();
  const worker = new Worker(new URL("runtime/worker.mjs", distUrl), {
    type: "module",
    name: "airi-memory",
  });
  const rpc = connect(worker);
  let info;
  try {
    info = await rpc.send({ kind: "boot", options: pythonOptions });
  } catch (error) {
    worker.terminate();
    throw error;
  }
  const ready = performance.now() - started;
  const call = (method, ...args) => rpc.send({ kind: "call", method, args });

  return {
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
    /** Read-only SQL for diagnostics; parameters are bound, never formatted in. */
    query: (sql, params = []) => call("query", sql, params),
    info: () => call("info"),
    ping: () => call("ping"),
    diagnostics: {
      bulkInsert: (rows) => call("diagnostics.bulkInsert", rows),
    },
    async close() {
      try {
        await rpc.send({ kind: "close" });
      } finally {
        rpc.close();
        worker.terminate();
      }
    },
  };
}

function connect(worker) {
  const pending = new Map();
  let nextId = 0;
  let closedError = null;
  const failAll = (error) => {
    closedError = error;
    for (const { reject } of pending.values()) reject(error);
    pending.clear();
  };
  worker.onmessage = ({ data }) => {
    const entry = pending.get(data.id);
    if (!entry) return;
    pending.delete(data.id);
    if (data.ok) entry.resolve(data.value);
    else entry.reject(toError(data.error));
  };
  worker.onerror = (event) => {
    event.preventDefault?.();
    failAll(new Error(`airi-memory worker failed: ${event.message ?? "unknown error"}`));
  };
  return {
    send(message) {
      if (closedError) return Promise.reject(closedError);
      const id = ++nextId;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        worker.postMessage({ id, ...message });
      });
    },
    close() {
      failAll(new Error("airi-memory is closed"));
    },
  };
}

function toError({ name, message, detail }) {
  const error = new Error(message);
  error.name = name;
  if (detail) error.detail = detail;
  return error;
}
