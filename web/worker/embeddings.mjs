// The embedding port's browser side: the local model runs in a worker of its own
// (runtime/embedder.mjs), started on first use; vectors come back as one Float32Array.
// The model holds ~400 MB once loaded, so an idle worker is ended after `idleMs` and
// started again (about two seconds) when next needed.
export function createLocalEmbedder(runtimeUrl, onProgress = () => {}, idleMs = 60_000) {
  let worker = null;
  let lastId = 0;
  let idleTimer = null;
  const pending = new Map();
  const call = (message, transfer = []) => {
    clearTimeout(idleTimer);
    worker ??= start();
    const id = ++lastId;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      worker.postMessage({ id, ...message }, transfer);
    }).finally(() => {
      if (pending.size === 0) idleTimer = setTimeout(stop, idleMs);
    });
  };
  const stop = () => {
    worker?.terminate();
    worker = null;
  };
  function start() {
    const started = new Worker(`${runtimeUrl}embedder.mjs`, { type: "module", name: "airi-embedder" });
    started.onmessage = ({ data }) => {
      if (data.event === "progress") return onProgress({ phase: "model", loaded: data.loaded, total: data.total });
      const entry = pending.get(data.id);
      pending.delete(data.id);
      if (data.ok) entry.resolve(data.value);
      else entry.reject(new Error(data.error));
    };
    started.onerror = (event) => {
      for (const { reject } of pending.values()) reject(new Error(`embedder failed: ${event.message}`));
      pending.clear();
    };
    return started;
  }
  return {
    model: "all-MiniLM-L6-v2",
    dimensions: 384,
    load: () => call({ kind: "load" }),
    /** Vectors of `texts`, row after row (texts.length x 384), L2-normalised. */
    embed: (texts) => call({ kind: "embed", texts }),
    close() {
      clearTimeout(idleTimer);
      stop();
    },
  };
}
