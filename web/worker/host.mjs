// Everything the Python ports reach in the browser, gathered in one object: IndexedDB
// stores (storage port), a DuckDB-WASM connection (SQL port), gpt-tokenizer (token
// port) and fetch (HTTP port). The worker hands it to Python at boot; tests inside
// pytest-pyodide import it the same way.
import { openDuckDb } from "./duckdb-engine.mjs";
import { postJson } from "./http.mjs";
import { openStore } from "./idb-store.mjs";
import { createTokenCounter } from "./tokens.mjs";

export async function createBrowserHost({ runtimeUrl }) {
  const sql = await openDuckDb(runtimeUrl);
  return {
    idb: { open: openStore },
    sql,
    tokens: createTokenCounter(runtimeUrl),
    http: { postJson },
  };
}
