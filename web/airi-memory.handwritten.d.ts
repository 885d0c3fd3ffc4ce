// ---------------------------------------------------------------------------------------
// Written by hand (web/airi-memory.handwritten.d.ts, appended to the generated part by
// build/facade.py): what the facade does on the page alone. Its members are listed in
// JS_ONLY_MEMBERS (py/airi_memory/api_methods.py); the table's entries marked
// declared_by_hand are declared here too, since their facade takes the app's functions.

/** One step of boot: `fraction` grows from 0 to 1 (reached when the system is ready). */
export interface BootProgress {
  phase: "start" | "pyodide" | "imports" | "duckdb" | "python";
  fraction: number;
  /** Milliseconds since the worker began booting. */
  elapsedMs: number;
}

/** The app's own summariser: runs on the page, Python calls it by name. */
export type SummarizeFunction = (request: {
  messages: { role: string; content: string }[];
  model: string;
}) => string | Promise<string>;

/** The app's own embedder (provider "custom"): one vector per text. */
export type EmbedFunction = (request: { texts: string[]; model: string }) => number[][] | Promise<number[][]>;

export type SummarizerOptions = LlmConfig & { summarize?: SummarizeFunction };
export type EmbeddingOptions = EmbeddingConfig & { embed?: EmbedFunction };

export interface MemorySystemOptions extends Omit<SystemOptions, "summarizer" | "embeddings"> {
  /** Where dist/ is served (runtime/ inside it); by default beside airi-memory.mjs. */
  baseUrl?: string | URL;
  summarizer?: SummarizerOptions | null;
  embeddings?: EmbeddingOptions;
  /** Called as boot goes on (also the "boot-progress" event), for a progress bar. */
  onProgress?: (progress: BootProgress) => void;
  /** Adds `_test` (faults on request): tests only. */
  testHooks?: boolean;
  /**
   * Experimental: restore Python from a memory snapshot made at build time instead of
   * booting it (about 1 s less to ready here). It rests on Pyodide's private API, and
   * every tab then starts with the same string-hash seed; if the restore fails, Python
   * boots as usual and `startupSnapshot` says why.
   */
  startupSnapshot?: boolean;
}

export interface StorageMethods {
  /** Store a JSON value; undefined removes the key (as in unstorage). */
  setItem(key: string, value: unknown): Promise<null>;
}

export interface SessionsMethods {
  /** The active session of a character ("default" by default). */
  getActiveSessionId(characterId?: string): Promise<string | null>;
  /** Make a session the active one (null: none). */
  setActiveSessionId(sessionId: string | null): Promise<string | null>;
  /** The seed's property: assigning it queues setActiveSessionId. */
  activeSessionId: string | null;
  /** The promise of the last assignment to activeSessionId. */
  activeSessionIdSaved: Promise<string | null> | undefined;
  /** Messages one by one, fetched from the worker in batches (50 by default). */
  streamMessages(sessionId: string, options?: { batchSize?: number }): AsyncGenerator<ChatHistoryItem, void, undefined>;
}

export interface ContextMethods {
  /** `provide()` is called right before each composeMessages; it returns an object or null. */
  registerProvider(sourceType: string, provide: () => unknown): Promise<string[]>;
  /** Stop asking a provider; false when there was none. */
  unregisterProvider(sourceType: string): Promise<boolean>;
}

export interface MemoryEvents {
  /** Another tab wrote sessions or messages. */
  change: { sessionIds: string[]; source?: string; [key: string]: unknown };
  /** Records found unreadable after start-up. */
  quarantine: { records: QuarantinedRecord[] };
  "boot-progress": BootProgress;
  /** The local embedding model loading, and background indexing. */
  "embedding-progress": Record<string, unknown>;
  /** IndexedDB was restored from its second copy at start (see BootInfo.restored). */
  "storage-restored": { records: number | null; from: number | null; through: number };
  /** A write committed to IndexedDB could not be added to its second copy; the copy is
   *  rewritten from IndexedDB. */
  "storage-copy-failed": { message: string };
}

/** What boot tells; on the object from createMemorySystem, or once whenReady resolved. */
export interface BootInfo {
  /** Milliseconds from openMemorySystem/createMemorySystem to ready: sessions are read,
   *  and the methods that need only them, the app's storage or context answer at once. */
  ready: number;
  /** Milliseconds to loaded (the history in DuckDB): set once whenLoaded resolved. */
  loaded?: number;
  userId: string;
  /** `duckdb` is null until whenLoaded resolved. */
  versions: Versions & { pyodide: string; duckdbWasm: string };
  /** Milliseconds the worker spent booting Pyodide, the wheel and DuckDB-WASM. */
  bootMs: number;
  /** When each part of boot finished (ms since boot began). */
  bootPhases: {
    snapshot?: number;
    pyodide?: number;
    imports?: number;
    /** After ready: DuckDB started, and start-up loaded (set once whenLoaded resolved). */
    duckdb?: number;
    python?: number;
    loaded?: number;
  };
  /** The startupSnapshot option's outcome: "off", "used", or "failed: <why>". */
  startupSnapshot: string;
  mounts: string[];
  /** Set when this start found IndexedDB behind its second copy (in OPFS) and restored
   *  it: Chromium deletes an origin's IndexedDB it finds corrupt after a crash. `records`
   *  is how many were written back (null when only the missing writes were replayed),
   *  `from` the store's write number before (null: it was empty), `through` after. The
   *  same detail comes as a "storage-restored" event. */
  restored: { records: number | null; from: number | null; through: number } | null;
  /** Records start-up could not read: kept, untouched, left out of every read (the
   *  message records among them once whenLoaded resolved). */
  quarantined: QuarantinedRecord[];
}

export interface TestHooks {
  crash(target: "duckdb" | "embedder"): Promise<null>;
  block(ms: number): Promise<null>;
  failCommits(name: string, count?: number): Promise<null>;
  failCopies(count?: number): Promise<null>;
}

export interface MemorySystemMembers extends GeneratedMethods {
  /** Resolves with this object once booted; rejects with boot's error. */
  whenReady: Promise<MemorySystem>;
  /** Resolves with this object once start-up has loaded the history into DuckDB (messages,
   *  search and writes answer without waiting; they wait by themselves before); rejects
   *  with what stopped it (DuckDB did not start), as those calls do. */
  whenLoaded: Promise<MemorySystem>;
  addEventListener<K extends keyof MemoryEvents>(
    type: K,
    listener: (event: CustomEvent<MemoryEvents[K]>) => void,
    options?: boolean | AddEventListenerOptions,
  ): void;
  removeEventListener<K extends keyof MemoryEvents>(
    type: K,
    listener: (event: CustomEvent<MemoryEvents[K]>) => void,
    options?: boolean | EventListenerOptions,
  ): void;
  /** Another embedding model or provider; "custom" takes `embed`. */
  configureEmbeddings(config: EmbeddingOptions | null): Promise<EmbeddingsStatus>;
  /** The LLM that writes summaries; null removes it. */
  configureSummarizer(config: SummarizerOptions | null): Promise<SummarizerStatus>;
  /** navigator.storage.estimate(), in bytes, where the browser tells. */
  estimateStorage(): Promise<{ usage: number | null; quota: number | null }>;
  /** Ask the browser not to evict the data; whether it agreed. */
  requestPersistence(): Promise<boolean>;
  /** Let queued writes finish (within timeouts.closeMs), then end the workers; later
   *  calls reject with MemoryClosedError. */
  close(): Promise<void>;
  /** Only with the testHooks option. */
  _test?: TestHooks;
}

/** The memory system, booted. */
export interface MemorySystem extends MemorySystemMembers, BootInfo {}

/** The memory system while it boots: calls are queued until it is ready. */
export interface OpeningMemorySystem extends MemorySystemMembers, Partial<BootInfo> {}

/** The memory system once it is ready; rejects if boot fails. */
export function createMemorySystem(options?: MemorySystemOptions): Promise<MemorySystem>;

/** The memory system at once: calls made before it is ready are queued and sent once
 *  boot is done (rejecting with boot's error if it fails); `whenReady` says when. */
export function openMemorySystem(options?: MemorySystemOptions): OpeningMemorySystem;

/** What eraseMemorySystem removed. */
export interface ErasedMemory {
  /** IndexedDB records (the mounts' records and the copy's clock aside). */
  records: number;
  /** Files of the second copy in OPFS. */
  copyFiles: number;
}

/** Erases everything the library stored in this browser (IndexedDB records of its mounts
 *  and the OPFS copy); other code's records stay. Every memory system of the origin must
 *  be closed first, else it rejects with MemoryInUseError and erases nothing. Records
 *  already synced stay on the server and come back at the next sync. */
export function eraseMemorySystem(options?: { baseUrl?: string | URL }): Promise<ErasedMemory>;
