// Everything the Python ports reach in the browser, gathered in one object: IndexedDB
// stores (storage port) and a DuckDB-WASM connection (SQL port). The worker hands it to
// Python at boot; tests inside pytest-pyodide import it the same way.
import { openDuckDb } from "./duckdb-engine.mjs";
import { openStore } from "./idb-store.mjs";

export async function createBrowserHost({ runtimeUrl }) {
  const sql = await openDuckDb(runtimeUrl);
  return { idb: { open: openStore }, sql };
}
