// Everything the Python ports reach in the browser, gathered in one object: IndexedDB
// stores (storage port), a DuckDB-WASM connection (SQL port), gpt-tokenizer (token
// port), fetch (HTTP port) and the local embedding model (embedding port, in a worker of
// its own). The worker hands it to Python at boot; tests inside pytest-pyodide import it
// the same way. `onEvent` receives progress the page may want to show.
import { openDuckDb } from "./duckdb-engine.mjs";
import { createLocalEmbedder } from "./embeddings.mjs";
import { postJson } from "./http.mjs";
import { openStore } from "./idb-store.mjs";
import { createTokenCounter } from "./tokens.mjs";

export async function createBrowserHost({ runtimeUrl, onEvent = () => {} }) {
  const sql = await openDuckDb(runtimeUrl);
  return {
    idb: { open: openStore },
    sql,
    tokens: createTokenCounter(runtimeUrl),
    http: { postJson },
    embedder: createLocalEmbedder(runtimeUrl, (detail) => onEvent("embedding-progress", detail)),
  };
}
