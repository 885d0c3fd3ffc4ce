// DuckDB-WASM behind the small surface the Python SQL port needs: bound parameters,
// results by column (typed arrays where the column allows), inserts as Arrow tables.
import * as duckdb from "@duckdb/duckdb-wasm";
import {
  Bool,
  Float64,
  Table,
  Utf8,
  makeData,
  makeVector,
  tableFromIPC,
  tableToIPC,
  vectorFromArray,
} from "apache-arrow";

const NUMERIC_TYPE_IDS = new Set([2, 3]); // Arrow Type.Int, Type.Float

/** DuckDB's worker died or stopped answering; every later call fails with it too. Python
 *  maps it by name (py/airi_memory/browser/sql.py) to its own SqlEngineStoppedError. */
export class SqlEngineStoppedError extends Error {
  name = "SqlEngineStoppedError";
}

const DEFAULT_CALL_TIMEOUT_MS = 120_000;
// Starting DuckDB (fetching and compiling its WASM) is bounded apart from calls: a short
// call bound, as tests set, must not fail a slow start.
const START_TIMEOUT_MS = 120_000;

/**
 * DuckDB-WASM, returned at once and started once `startWhen` resolves: the worker starts
 * it only after Pyodide's own WASM is compiled, so the two do not share the two cores,
 * and no ready waits for it (calls wait for the start themselves; `started` settles with
 * it).
 *
 * `callTimeoutMs` bounds each call. AsyncDuckDB alone never settles a call whose worker
 * died: its onError clears the pending requests without rejecting them, and a terminated
 * worker sends no event at all. So calls are tracked here: when the worker reports an
 * error, or a call outlives its bound (a hung worker), the worker is terminated and every
 * call in flight, and every later one, rejects with SqlEngineStoppedError.
 */
export function openDuckDb(runtimeUrl, { callTimeoutMs = DEFAULT_CALL_TIMEOUT_MS, startWhen } = {}) {
  const file = (name) => new URL(`duckdb/${name}`, runtimeUrl).href;
  let worker = null; // DuckDB's own, and its client: made when the start begins
  let db = null;
  let stopped = null; // the SqlEngineStoppedError, once the worker is gone
  const inFlight = new Set(); // reject functions of the calls not yet settled

  function stop(reason) {
    if (stopped) return;
    stopped = new SqlEngineStoppedError(`DuckDB's worker stopped: ${reason}`);
    worker?.terminate();
    for (const reject of inFlight) reject(stopped);
    inFlight.clear();
  }

  /** `work()`'s result, unless the worker stops first or `work` outlives `limitMs`. */
  function bounded(what, work, limitMs = callTimeoutMs) {
    if (stopped) return Promise.reject(stopped);
    return new Promise((resolve, reject) => {
      inFlight.add(reject);
      const timer = setTimeout(() => stop(`${what} did not finish within ${limitMs} ms`), limitMs);
      work()
        .then(resolve, reject)
        .finally(() => {
          clearTimeout(timer);
          inFlight.delete(reject);
        });
    });
  }

  async function start() {
    await startWhen;
    if (stopped) throw stopped; // closed before it started
    const bundle = await duckdb.selectBundle({
      mvp: { mainModule: file("duckdb-mvp.wasm"), mainWorker: file("duckdb-browser-mvp.worker.js") },
      eh: { mainModule: file("duckdb-eh.wasm"), mainWorker: file("duckdb-browser-eh.worker.js") },
    });
    worker = new Worker(bundle.mainWorker);
    db = new duckdb.AsyncDuckDB(new duckdb.VoidLogger(), worker);
    // Handled here, so a crash in DuckDB's worker does not travel on to ours (and the page).
    worker.addEventListener("error", (event) => {
      event.preventDefault();
      stop(event.message || "it raised an error it did not catch");
    });
    worker.addEventListener("messageerror", () => stop("a message from it could not be read"));
    // DuckDB-WASM never settles `instantiate` when its WASM cannot be fetched (its worker
    // reports nothing): asked here too, a missing file fails the start at once.
    const fetched = fetch(bundle.mainModule, { method: "HEAD" }).then((response) => {
      if (!response.ok) throw new Error(`its WASM could not be fetched (HTTP ${response.status})`);
    });
    fetched.catch(() => {}); // reported by the start, unless stopped before it
    return bounded(
      "starting DuckDB",
      async () => {
        await Promise.all([fetched, db.instantiate(bundle.mainModule)]);
        const connection = await db.connect();
        // Extensions would be fetched from the network; the core has what we use.
        await connection.query("SET autoinstall_known_extensions=false");
        await connection.query("SET autoload_known_extensions=false");
        // No files or URLs from SQL (read_csv('https://...'), FROM 'x.csv', COPY ...): the
        // core never needs them, diagnostics must not reach them, and the page makes no
        // requests beyond its origin. DuckDB keeps this off until the database closes.
        await connection.query("SET enable_external_access=false");
        return { connection, version: await db.getVersion() };
      },
      Math.max(callTimeoutMs, START_TIMEOUT_MS),
    ).catch((error) => {
      stop(`it could not start: ${error?.message ?? error}`); // its WASM missing, a bad build ...
      throw stopped;
    });
  }
  let connection = null;
  const started = start().then((opened) => {
    connection = opened.connection;
    return opened.version;
  });
  started.catch(() => {}); // every call that waits on it rejects with its error
  let temporaryCount = 0;
  // Prepared statements are kept by SQL text: the core runs the same few statements over
  // and over, and preparing costs a round trip to DuckDB's own worker.
  const prepared = new Map();
  const PREPARED_LIMIT = 64;
  // memory.query() runs on a connection of its own, so its read-only transactions never
  // wrap the core's statements on the main connection.
  let diagnostics = null;

  async function statementFor(sql) {
    let statement = prepared.get(sql);
    if (statement) {
      prepared.delete(sql); // re-insert: the Map's order is our least-recently-used order
    } else {
      statement = await connection.prepare(sql);
      if (prepared.size >= PREPARED_LIMIT) {
        const [oldestSql, oldest] = prepared.entries().next().value;
        prepared.delete(oldestSql);
        await oldest.close();
      }
    }
    prepared.set(sql, statement);
    return statement;
  }

  async function run(sql, params) {
    const values = params ? Array.from(params, bindable) : [];
    if (values.length === 0) return connection.query(sql);
    return (await statementFor(sql)).query(...values);
  }

  // What Python calls, each bounded by `bounded` below.
  const calls = {
    async execute(sql, params) {
      await run(sql, params);
    },
    async query(sql, params) {
      return toColumns(await run(sql, params));
    },
    async beginReadOnly() {
      diagnostics ??= await db.connect();
      await diagnostics.query("BEGIN TRANSACTION READ ONLY");
    },
    /** Always prepared, even without parameters: DuckDB refuses to prepare several
     *  statements at once, where query() would run them all. */
    async queryReadOnly(sql, params) {
      const statement = await diagnostics.prepare(sql);
      try {
        return toColumns(await statement.query(...Array.from(params, bindable)));
      } finally {
        await statement.close();
      }
    },
    async endReadOnly() {
      await diagnostics.query("ROLLBACK");
    },
    async insertColumns(table, names, columns) {
      const vectors = {};
      names.forEach((name, i) => {
        vectors[name] = toVector(columns[i]);
      });
      const staging = `__airi_staging_${++temporaryCount}`;
      await connection.insertArrowTable(new Table(vectors), { name: staging, create: true });
      try {
        const list = names.join(", ");
        await connection.query(`INSERT INTO ${table} (${list}) SELECT ${list} FROM ${staging}`);
      } finally {
        await connection.query(`DROP TABLE IF EXISTS ${staging}`);
      }
      return columns.length ? columns[0].length : 0;
    },
    /** A query's result as one Arrow IPC stream (a snapshot to keep in IndexedDB). */
    async exportArrow(sql) {
      return tableToIPC(await connection.query(sql), "stream");
    },
    /** exportArrow bytes appended to the table they came from (same columns, in order):
     *  handed to DuckDB as they are, with no re-encoding and no staging copy. */
    async importArrow(table, bytes) {
      // Parse here first: damaged bytes must fail before they reach (and upset) DuckDB.
      const rows = tableFromIPC(bytes);
      if (rows.numRows === 0) return 0;
      const before = await connection.query(`SELECT count(*)::INTEGER AS n FROM ${table}`);
      await connection.insertArrowFromIPCStream(bytes, { name: table, create: false });
      const after = await connection.query(`SELECT count(*)::INTEGER AS n FROM ${table}`);
      return after.getChildAt(0).get(0) - before.getChildAt(0).get(0);
    },
  };

  return {
    /** Settles when DuckDB has started (or failed to). */
    started: started.then(() => undefined),
    version: () => started,
    ...Object.fromEntries(
      Object.entries(calls).map(([name, call]) => [
        name,
        async (...args) => {
          await started;
          return bounded(name, () => call(...args));
        },
      ]),
    ),
    /** Ends DuckDB's worker at once: its tables mirror what IndexedDB keeps, so nothing is
     *  lost, and a hung worker cannot hold up a close. */
    async close() {
      stop("the memory system was closed");
    },
    /** Test-only (testHooks): once a call is in flight (or after `waitMs`), the worker is
     *  terminated and reports an error, as a crashed worker does. */
    async crashForTest(waitMs = 10_000) {
      await started.catch(() => {}); // a call's, not the start's
      const busy = await until(() => inFlight.size > 0, waitMs);
      worker.terminate();
      worker.dispatchEvent(new ErrorEvent("error", { message: "terminated by a test" }));
      return { busy };
    },
  };
}

/** Whether `condition()` became true within `waitMs` (checked every 10 ms). */
async function until(condition, waitMs) {
  const deadline = performance.now() + waitMs;
  while (!condition()) {
    if (performance.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return true;
}

function bindable(value) {
  if (value === undefined) return null;
  if (typeof value === "bigint") {
    return value <= BigInt(Number.MAX_SAFE_INTEGER) && value >= BigInt(Number.MIN_SAFE_INTEGER)
      ? Number(value)
      : value.toString();
  }
  return value;
}

function toColumns(table) {
  const fields = table.schema.fields;
  return {
    columns: fields.map((field) => field.name),
    data: fields.map((field, i) => {
      const vector = table.getChildAt(i);
      if (vector.nullCount === 0 && NUMERIC_TYPE_IDS.has(field.type.typeId)) return vector.toArray();
      return Array.from(vector, plain);
    }),
  };
}

// SQL NULL becomes undefined, which Pyodide turns into None (null would be jsnull).
function plain(value) {
  if (value === null || value === undefined) return undefined;
  if (typeof value === "object" && typeof value.toArray === "function") {
    return Array.from(value.toArray(), plain); // a LIST cell
  }
  if (typeof value === "object" && typeof value.toJSON === "function") return value.toJSON();
  return value;
}

function toVector(values) {
  if (ArrayBuffer.isView(values)) return makeVector(values);
  if (values.utf8) {
    // Text already in Arrow's layout (UTF-8 bytes, Int32 offsets, optional validity bits).
    const length = values.offsets.length - 1;
    const nullBitmap = values.validity ?? undefined;
    const valid = nullBitmap ? countBits(nullBitmap, length) : length;
    return makeVector(
      makeData({ type: new Utf8(), length, nullCount: length - valid, nullBitmap, valueOffsets: values.offsets, data: values.utf8 }),
    );
  }
  // Python's None arrives as undefined; Arrow's builders only take null as missing.
  const cells = Array.from(values, (v) => (v === undefined ? null : v));
  const sample = cells.find((v) => v !== null);
  const type = typeof sample === "number" ? new Float64() : typeof sample === "boolean" ? new Bool() : new Utf8();
  return vectorFromArray(cells, type);
}

function countBits(bitmap, length) {
  let count = 0;
  for (let i = 0; i < length; i++) count += (bitmap[i >> 3] >> (i & 7)) & 1;
  return count;
}

/** Numeric columns of `exportArrow` bytes (a snapshot's table), as typed arrays, by name:
 *  read here, where the format is made, so that they never cross into Python. */
export function columnsOfExport(bytes, names) {
  const table = tableFromIPC(bytes);
  return names.map((name) => {
    const column = table.getChild(name);
    if (column === null) throw new Error(`the saved table has no column ${name}`);
    if (column.nullCount > 0) throw new Error(`the saved table's column ${name} holds nulls`);
    return column.toArray().slice(); // a copy: the bytes may go on to DuckDB's worker
  });
}

/** Typed-array columns, by name, in the format `exportArrow` makes (Arrow IPC): a table
 *  kept outside DuckDB is saved in a snapshot as if DuckDB had exported it. */
export function exportOfColumns(columns) {
  const vectors = Object.fromEntries(Object.entries(columns).map(([name, values]) => [name, makeVector(values)]));
  return tableToIPC(new Table(vectors), "stream");
}
