// The embedding port's browser side: the local model runs in a worker of its own
// (runtime/embedder.mjs), started on first use; vectors come back as one Float32Array.
// The model holds ~400 MB once loaded, so an idle worker is ended after `idleMs` and
// started again (about two seconds) when next needed.
//
// Every call settles within a bound: `timeoutMs` once this worker has answered (the model
// is loaded), `loadTimeoutMs` before (starting the worker and loading the model come
// first). A worker that reports an error, sends what cannot be read, or outlives a bound
// is ended, and every call waiting on it rejects with EmbedderStoppedError naming why;
// the next call starts a fresh worker (a crash from one huge batch need not last).

/** The model's worker died or stopped answering. */
export class EmbedderStoppedError extends Error {
  name = "EmbedderStoppedError";
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_LOAD_TIMEOUT_MS = 120_000;

export function createLocalEmbedder(
  runtimeUrl,
  onProgress = () => {},
  { idleMs = 60_000, loadTimeoutMs = DEFAULT_LOAD_TIMEOUT_MS } = {},
) {
  let worker = null;
  let loaded = false; // whether this worker has answered a call (its model is in memory)
  let lastId = 0;
  let idleTimer = null;
  const pending = new Map(); // id -> {resolve, reject, timer}
  const call = (message, timeoutMs = DEFAULT_TIMEOUT_MS, transfer = []) => {
    clearTimeout(idleTimer);
    worker ??= start();
    const id = ++lastId;
    const limitMs = loaded ? timeoutMs : loadTimeoutMs;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => fail(`a call did not finish within ${limitMs} ms`), limitMs);
      pending.set(id, { resolve, reject, timer });
      worker.postMessage({ id, ...message }, transfer);
    }).finally(() => {
      if (pending.size === 0) idleTimer = setTimeout(stop, idleMs);
    });
  };
  const stop = () => {
    worker?.terminate();
    worker = null;
    loaded = false;
  };
  /** Ends the worker and rejects every call waiting on it. */
  function fail(reason) {
    stop();
    const error = new EmbedderStoppedError(`the embedding model's worker stopped: ${reason}`);
    for (const { reject, timer } of pending.values()) {
      clearTimeout(timer);
      reject(error);
    }
    pending.clear();
  }
  function start() {
    const started = new Worker(`${runtimeUrl}embedder.mjs`, { type: "module", name: "airi-embedder" });
    started.onmessage = ({ data }) => {
      if (data.event === "progress") return onProgress({ phase: "model", loaded: data.loaded, total: data.total });
      const entry = pending.get(data.id);
      if (!entry) return;
      pending.delete(data.id);
      clearTimeout(entry.timer);
      if (data.ok) {
        loaded = true;
        entry.resolve(data.value);
      } else entry.reject(new Error(data.error));
    };
    // Handled here, so a crash in the model's worker does not travel on to ours (and the
    // page); an event from a worker already replaced concerns nobody.
    started.onerror = (event) => {
      event.preventDefault();
      if (worker === started) fail(event.message || "it raised an error it did not catch");
    };
    started.onmessageerror = () => {
      if (worker === started) fail("a message from it could not be read");
    };
    return started;
  }
  return {
    model: "all-MiniLM-L6-v2",
    dimensions: 384,
    load: () => call({ kind: "load" }),
    /** Vectors of `texts`, row after row (texts.length x 384), L2-normalised; `timeoutMs`
     *  bounds the call once the model is loaded. */
    embed: (texts, timeoutMs) => call({ kind: "embed", texts }, timeoutMs),
    close() {
      clearTimeout(idleTimer);
      fail("the memory system was closed");
    },
    /** Test-only (testHooks): once a call is in flight (or after `waitMs`), the worker is
     *  terminated and reports an error, as a crashed worker does. */
    async crashForTest(waitMs = 30_000) {
      const deadline = performance.now() + waitMs;
      while (pending.size === 0 && performance.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const busy = pending.size > 0;
      const victim = worker;
      victim?.terminate();
      victim?.dispatchEvent(new ErrorEvent("error", { message: "terminated by a test" }));
      return { busy };
    },
  };
}
