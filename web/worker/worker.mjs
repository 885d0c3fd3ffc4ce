// The worker that hosts Pyodide, so the page never freezes. It boots Python with our
// packages and the browser host (IndexedDB; DuckDB-WASM, started once our modules are
// imported), is ready once Python has read the sessions, then forwards each facade
// call to the Python core and posts back plain JS values. Calls that need the history
// in DuckDB wait in Python until start-up has loaded it ("loaded").
import { readSitePackages, writeSitePackages } from "./site-packages.mjs";

const runtimeUrl = new URL("./", import.meta.url).href;
// The host (IndexedDB, DuckDB-WASM, apache-arrow: 0.6 MB of script) loads beside
// Pyodide's boot instead of before it: a static import held the worker's first line, and
// so Pyodide's start, until it was fetched and parsed (55-100 ms of every start).
const hostModule = import("./host.mjs");
hostModule.catch(() => {}); // each use awaits it, and fails with its error
// Events for the page (progress of the embedding model and of background indexing).
const postEvent = (event, detail) => self.postMessage({ event, detail });
let api = null;
let pyodide = null;
let host = null; // its DuckDB and model workers are ended on close, whatever Python does
let testHooks = false; // the facade's testHooks option: crash and block on request
let poll = null;
const TAB_POLL_MS = 5000; // catch up at least this often, hints or not (cheap when idle)
// Each boot phase's share of a typical boot (the bench's bootPhases), for a progress bar:
// the fraction grows by a phase's share when it ends and is 1 once Python is ready.
// (The startupSnapshot option's snapshot phase, its read, moves the bar by nothing.)
// DuckDB's start and the load after ready are phases too, in bootPhases, not in the bar.
const BOOT_PHASE_SHARES = { snapshot: 0, pyodide: 0.55, imports: 0.25, python: 0.2 };

// Hints are coalesced: one catch-up runs at a time, and any number of hints during it
// cost one more. Python's sync() coalesces the same way; this keeps the bridge quiet.
let catchUp = { running: false, again: false };
async function catchUpSoon() {
  if (!api) return;
  if (catchUp.running) {
    catchUp.again = true;
    return;
  }
  catchUp.running = true;
  try {
    do {
      catchUp.again = false;
      const reply = JSON.parse(await call("sessions.sync", []));
      if (reply.ok && reply.value.sessionIds.length) {
        self.postMessage({ event: "change", detail: { ...reply.value, source: "other-tab" } });
      }
    } while (catchUp.again && api);
  } catch {
    // recorded by Python in sessions.stats().problems.sync; the next hint or poll retries
  } finally {
    catchUp.running = false;
  }
}

/** The start-up snapshot build/make_snapshot.mjs wrote beside the runtime, unzipped. */
async function readSnapshot() {
  const response = await fetch(`${runtimeUrl}pyodide-snapshot.bin.gz`);
  if (!response.ok) throw new Error(`it could not be fetched (HTTP ${response.status})`);
  const unzipped = response.body.pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(unzipped).arrayBuffer());
}

// Our Python packages' bundle, `{ file, integrity }`: defined by the build (esbuild), which
// wrote the file beside the runtime (build/site_bundle.py).
/* global SITE_PACKAGES */

/** Pyodide with our packages, restored from the start-up snapshot when asked (Pyodide's
 *  private `_loadSnapshot`): if that fails, booted as usual, and `outcome` says why. The
 *  packages' bundle is fetched beside the runtime's start and written before Python runs. */
async function startPython(loadPyodide, withSnapshot, timed, outcome) {
  const { file, integrity } = SITE_PACKAGES;
  const files = fetch(`${runtimeUrl}${file}`, { integrity }).then(readSitePackages); // checked by the browser
  files.catch(() => {}); // reported below, once Pyodide is up
  let unwritten = null;
  const options = (snapshot) => ({
    indexURL: runtimeUrl,
    lockFileURL: `${runtimeUrl}pyodide-lock.json`,
    fullStdLib: false,
    fsInit: async (FS, { sitePackages }) => {
      unwritten = null; // this start's outcome only
      try {
        await writeSitePackages(FS, sitePackages, await files, { preload: !snapshot });
      } catch (error) {
        unwritten = error; // Pyodide would only log it: the boot fails with it instead
      }
    },
    ...(snapshot ? { _loadSnapshot: snapshot } : {}),
  });
  const started = async () => {
    if (withSnapshot) {
      try {
        const snapshot = await timed("snapshot", readSnapshot());
        const restored = await loadPyodide(options(snapshot));
        outcome.startupSnapshot = "used";
        return restored;
      } catch (error) {
        outcome.startupSnapshot = `failed: ${String(error?.message ?? error).slice(0, 300)}`;
      }
    }
    return loadPyodide(options(null));
  };
  const pyodide = await started();
  if (unwritten) {
    throw new Error(
      `airi-memory's Python packages (${file}) could not be loaded: the fetch failed, or the file ` +
        `is not this build's (a stale cache?): ${unwritten.message}`,
    );
  }
  return pyodide;
}

let phases = {}; // when each part of boot, and of the load after it, ended (ms)
let loading = null; // start-up's load in Python, then info() with the phases

async function boot(options, withTestHooks, withSnapshot) {
  testHooks = withTestHooks === true;
  const started = performance.now();
  phases = {};
  let fraction = 0;
  const progress = (phase) => postEvent("boot-progress", { phase, fraction, elapsedMs: performance.now() - started });
  const ended = (name) => {
    phases[name] = performance.now() - started;
  };
  const timed = (name, promise) =>
    promise.then((value) => {
      ended(name);
      fraction = Math.round((fraction + BOOT_PHASE_SHARES[name]) * 1000) / 1000; // 1 at the end
      progress(name);
      return value;
    });
  progress("start");
  // DuckDB's 34 MB of wasm compile once our modules are imported, not beside the imports:
  // on two cores they slowed each other (ready 1.78 -> 1.63 s, loaded 2.57 -> 2.49 s when
  // it moved here from Pyodide's own compile, in the same bench run).
  let imported;
  const startSqlWhen = new Promise((resolve) => {
    imported = resolve;
  });
  const outcome = { startupSnapshot: "off", restored: null };
  const onEvent = (event, detail) => {
    if (event === "storage-restored") outcome.restored = detail; // boot's answer tells it too
    postEvent(event, detail);
  };
  const { loadPyodide } = await import(`${runtimeUrl}pyodide.mjs`);
  const python = timed("pyodide", startPython(loadPyodide, withSnapshot === true, timed, outcome)).then(
    (loaded) => {
      pyodide = loaded;
      const browserHost = loaded.pyimport("airi_memory.browser.host");
      imported();
      return timed("imports", Promise.resolve(browserHost));
    },
  );
  python.catch(() => {}); // awaited below, once the host is made
  const { createBrowserHost } = await hostModule;
  host = await createBrowserHost({ runtimeUrl, onEvent, timeouts: options?.timeouts ?? {}, startSqlWhen });
  host.sql.started.then(() => ended("duckdb"), () => {}); // its failure is the load's
  // Tabs of one origin hint each other that the journal moved; each then catches up from
  // IndexedDB itself. A hint carries nothing to trust, and one lost (a frozen tab, a
  // message during boot) only delays the catch-up until the next hint or poll.
  const channel = new BroadcastChannel("airi-memory");
  channel.onmessage = () => catchUpSoon();
  const [browser, buildInfo] = await Promise.all([
    python,
    fetch(`${runtimeUrl}build-info.json`).then((response) => response.json()),
  ]);
  const publish = (journalNumber) => channel.postMessage({ journal: journalNumber });
  const emit = (event, detailJson) => postEvent(event, JSON.parse(detailJson));
  // Ready once the sessions are read; DuckDB and the rest of start-up load behind it.
  api = await timed("python", browser.boot(host, pyodide.toPy(options), publish, callApp, emit));
  loading = api.loaded().then((infoJson) => {
    ended("loaded");
    return { ...JSON.parse(infoJson), bootPhases: { ...phases } };
  });
  loading.catch(() => {}); // the facade's whenLoaded, and each call waiting on it, report it
  catchUpSoon(); // whatever was committed while this tab booted
  poll = setInterval(catchUpSoon, options?.tabPollMs ?? TAB_POLL_MS);
  const info = JSON.parse(await call("info", []));
  // Each phase: milliseconds from the start of boot until it finished.
  return { ...info.value, buildInfo, bootMs: performance.now() - started, bootPhases: { ...phases }, ...outcome };
}

// Python calls the app's own functions (context providers, an LLM callback) on the page:
// the name and a JSON payload go out, JSON text comes back.
const appCalls = new Map();
let lastAppCall = 0;
function callApp(name, payloadJson) {
  const id = ++lastAppCall;
  return new Promise((resolve, reject) => {
    appCalls.set(id, { resolve, reject });
    self.postMessage({ appCall: id, name, payload: payloadJson });
  });
}

function settleAppCall({ appReply, ok, json, message }) {
  const pending = appCalls.get(appReply);
  if (!pending) return;
  appCalls.delete(appReply);
  if (ok) pending.resolve(json);
  else pending.reject(new Error(message));
}

// Pyodide turns JS null into `jsnull`, not None; JSON's null means None to the core.
function nullsToUndefined(value) {
  if (value === null) return undefined;
  if (Array.isArray(value)) return value.map(nullsToUndefined);
  if (value && Object.getPrototypeOf(value) === Object.prototype) {
    // Defined, not assigned: an own "__proto__" key (JSON.parse makes one) stays a key
    // instead of becoming the copy's prototype.
    return Object.defineProperties(
      {},
      Object.fromEntries(
        Object.keys(value).map((key) => [
          key,
          { value: nullsToUndefined(value[key]), enumerable: true, writable: true, configurable: true },
        ]),
      ),
    );
  }
  return value;
}

async function call(method, args) {
  if (!api) throw new Error("airi-memory is not ready: boot failed or the system was closed");
  const pyArgs = pyodide.toPy(nullsToUndefined(args));
  try {
    // Python begins the call before start() returns, and answers through these with JS
    // values: JSON text, or an object it converted (BrowserApi.dispatch).
    const fail = (reject) => (name, message) => reject(Object.assign(new Error(message), { name }));
    return await new Promise((resolve, reject) => api.start(method, pyArgs, resolve, fail(reject)));
  } finally {
    pyArgs.destroy?.();
  }
}

// Python's close lets queued writes finish (within timeouts.closeMs); DuckDB's and the
// model's workers end here in any case.
async function close() {
  clearInterval(poll);
  try {
    if (api) await call("close", []);
  } finally {
    api = null;
    await host?.sql.close();
    host?.embedder.close();
  }
  return null;
}

// Only with the facade's testHooks option: an inner worker crashes (terminated, then the
// error event a crashed worker sends) once it has a call in flight, this worker's thread
// is blocked for `ms`, as a worker stuck in a loop would be, or the next IndexedDB
// commits fail with the DOMException `name`.
async function runTestHook({ action, target, ms, name, count }) {
  if (!testHooks) throw new Error("test hooks are off: create the memory system with testHooks: true");
  if (action === "crash" && target === "duckdb") return host.sql.crashForTest();
  if (action === "crash" && target === "embedder") return host.embedder.crashForTest();
  if (action === "failCommits") return host.idb.failNextCommits(String(name), count ?? 1);
  if (action === "failCopies") return host.idb.failNextCopies(count ?? 1);
  if (action === "block") {
    setTimeout(() => {
      const until = performance.now() + ms;
      while (performance.now() < until); // deliberately busy: nothing else runs
    });
    return null;
  }
  throw new Error(`unknown test hook ${JSON.stringify({ action, target })}`);
}

self.onmessage = async ({ data }) => {
  if (data.appReply) return settleAppCall(data);
  if (data.network) return hostModule.then((loaded) => loaded.setOnline(data.network.online));
  const { id, kind, method, args, options } = data;
  try {
    if (kind === "boot") {
      self.postMessage({ id, ok: true, value: await boot(options, data.testHooks, data.startupSnapshot) });
    } else if (kind === "loaded") {
      if (!loading) throw new Error("airi-memory is not ready: boot failed or the system was closed");
      self.postMessage({ id, ok: true, value: await loading });
    } else if (kind === "close") {
      self.postMessage({ id, ok: true, value: await close() });
    } else if (kind === "erase") {
      const { dbName, storeName, bases } = data.stored;
      const { eraseStore } = await hostModule;
      self.postMessage({ id, ok: true, value: await eraseStore(dbName, storeName, bases) });
    } else if (kind === "test") {
      self.postMessage({ id, ok: true, value: await runTestHook(data) });
    } else {
      // Python answers {ok, value} or {ok: false, error: {name, message}}, as JSON text
      // (parsed by the facade) or, when it holds bytes, as a converted object.
      const reply = await call(method, args);
      self.postMessage(typeof reply === "string" ? { id, json: reply } : { id, ...reply });
    }
  } catch (error) {
    self.postMessage({ id, ok: false, error: errorReply(error) });
  }
};

// A Python exception reaching here (boot's) carries its whole traceback as its message:
// the caller gets the exception's own message, and the traceback as `detail`.
function errorReply(error) {
  const text = String(error?.message ?? error);
  if (!error?.type) return { name: error?.name ?? "Error", message: text };
  const marker = `${error.type}: `;
  const at = text.lastIndexOf(marker);
  return { name: error.type, message: at < 0 ? text : text.slice(at + marker.length).trimEnd(), detail: text };
}
