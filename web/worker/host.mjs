// Everything the Python ports reach in the browser, gathered in one object: IndexedDB
// stores (storage port), a DuckDB-WASM connection (SQL port), gpt-tokenizer (token
// port), fetch (HTTP port), the network's state and Web Locks (the sync runner), the
// vectors' SIMD scan (vector scan port), the keyword index's postings (term index port),
// each message's session, role and time (doc scope port) and the local embedding model (embedding port, in a worker of its own). The worker
// hands it to Python at boot; tests inside pytest-pyodide import it the same way.
// `onEvent` receives progress the page may want to show; `timeouts` (the options' own,
// validated again by Python) bound the waits on DuckDB and on the model. DuckDB starts
// once `startSqlWhen` resolves (at once without it); its calls wait for that start.
import { columnsOfExport, exportOfColumns, openDuckDb } from "./duckdb-engine.mjs";
import { createLocalEmbedder } from "./embeddings.mjs";
import { request } from "./http.mjs";
import { failNextCommits } from "./idb-apply.mjs";
import { failNextCopies } from "./opfs-copy.mjs";
import { openStore } from "./idb-store.mjs";
import { network } from "./network.mjs";
import { createDocScope } from "./doc-scope.mjs";
import { createTermIndex } from "./term-index.mjs";
import { createVectorScan } from "./vector-scan.mjs";

export { setOnline } from "./network.mjs"; // the worker passes on what the page says
export { eraseStore } from "./erase.mjs"; // eraseMemorySystem's work, with no system booted
import { createTokenCounter } from "./tokens.mjs";

export async function createBrowserHost({ runtimeUrl, onEvent = () => {}, timeouts = {}, startSqlWhen }) {
  const sql = openDuckDb(runtimeUrl, { callTimeoutMs: positive(timeouts.sqlMs), startWhen: startSqlWhen });
  return {
    // In a worker, each store has its second copy in OPFS (opfs-copy.mjs).
    idb: {
      open: (dbName, storeName, options) => openStore(dbName, storeName, { ...options, copy: true, onEvent }),
      failNextCommits,
      failNextCopies,
    },
    sql,
    tokens: createTokenCounter(runtimeUrl),
    http: { request },
    network,
    vectorScan: { create: (dims) => createVectorScan(dims) },
    termIndex: { create: () => createTermIndex(), addSaved: addSavedTables, saved: savedPostings },
    docScope: { create: () => createDocScope(), addSaved: addSavedMessages },
    embedder: createLocalEmbedder(runtimeUrl, (detail) => onEvent("embedding-progress", detail), {
      loadTimeoutMs: positive(timeouts.embeddingLoadMs),
    }),
  };
}

/** A snapshot's search_terms (`savedPostings`' bytes) and search_text (DuckDB's exportArrow
 *  bytes) into a term index. */
function addSavedTables(index, termsTable, textTable) {
  const [postingDocs, terms, tfs] = columnsOfExport(termsTable, ["doc", "term", "tf"]);
  const [docs, lengths] = columnsOfExport(textTable, ["doc", "terms"]);
  index.add(docs, lengths, postingDocs, terms, tfs);
}

/** A snapshot's chat_messages (DuckDB's exportArrow bytes) into a doc scope. */
function addSavedMessages(scope, messagesTable) {
  scope.add(...columnsOfExport(messagesTable, ["doc", "session_id", "role", "created_at"]));
}

/** A term index's postings as a snapshot saves them (search_terms): Arrow IPC, as
 *  DuckDB exported the table when it held one. */
function savedPostings(index) {
  const { docs, terms, tfs } = index.postings();
  return exportOfColumns({ doc: docs, term: terms, tf: tfs });
}

/** A number of milliseconds setTimeout can wait, or undefined (the default then applies;
 *  Python refuses the options at boot anyway). */
function positive(ms) {
  return Number.isFinite(ms) && ms > 0 && ms < 2 ** 31 ? ms : undefined;
}
