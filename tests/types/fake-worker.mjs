// A stand-in for the browser's Worker, so node can open the real facade
// (dist/airi-memory.mjs) without Pyodide: it records what the facade posts (requests in
// `posted`, the page's network state in `network`), and the test answers boot and calls
// by hand. Used by tests/unit/test_facade.py.
export const posted = [];
export const network = [];
let current = null;

globalThis.Worker = class FakeWorker {
  constructor(url) {
    this.url = String(url);
    this.terminated = false;
    current = this;
  }
  postMessage(message) {
    (message.network ? network : posted).push(message);
  }
  terminate() {
    this.terminated = true;
  }
};

/** The worker's answer to the posted message of that kind (and method). */
export function reply(kind, value, { method, ok = true, error } = {}) {
  const message = posted.find((m) => m.kind === kind && (method === undefined || m.method === method));
  if (!message) throw new Error(`nothing posted of kind ${kind} ${method ?? ""}`);
  posted.splice(posted.indexOf(message), 1);
  current.onmessage({ data: ok ? { id: message.id, ok, value } : { id: message.id, ok, error } });
}

export function event(name, detail) {
  current.onmessage({ data: { event: name, detail } });
}

export const worker = () => current;

export const BOOT_INFO = {
  userId: "alice",
  activeSessionId: "s1",
  versions: { airiMemory: "0.1.0", python: "3.14", duckdb: "v1" },
  mounts: ["", "local"],
  quarantined: [],
  buildInfo: { pyodide: "314.0.7", duckdbWasm: "1.32.0" },
  bootMs: 10,
  bootPhases: { pyodide: 5, imports: 6, duckdb: 4, python: 10 },
};
