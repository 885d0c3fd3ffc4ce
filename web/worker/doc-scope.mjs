// Which docs a search filter allows, answered beside DuckDB: each message's session, role
// and time, in typed arrays indexed by doc (as in term-index.mjs and vector-scan.mjs).
//
// DuckDB answered this with a statement over every message (joined to its session for a
// character or a user): 9-12 ms at 100,000 messages in DuckDB-WASM, more than the ranking
// it narrows. Here it is one pass over three typed arrays.
//
// Sessions are held as numbers given in order of first sight, roles as the number of one
// of the five a filter may name (any other role a stored record holds as OTHER, which no
// filter names). A filter names sessions (Python resolves characters and users to them
// from the sessions it holds), roles, and a closed range of createdAt. Docs are never
// reused, so a removed doc stays marked and is never added again.

const ABSENT = -1; // never added
const REMOVED = -2;
const ROLES = new Map(["system", "user", "assistant", "tool", "error"].map((role, i) => [role, i]));
const OTHER = 255;

export class DocScope {
  #sessionOf = new Int32Array(0); // by doc: the session's number, or ABSENT / REMOVED
  #roleOf = new Uint8Array(0);
  #createdAt = new Float64Array(0); // epoch ms: exact as doubles up to 2^53
  #sessions = new Map(); // session id -> number
  #end = 1; // one past the highest doc added
  #live = 0;

  get size() {
    return this.#live;
  }

  /** Messages just in the mirror: docs (≥ 1) with their session ids, roles and createdAt. */
  add(docs, sessionIds, roles, createdAt) {
    let highest = 0;
    for (let i = 0; i < docs.length; i++) highest = Math.max(highest, docs[i]);
    this.#cover(highest + 1);
    for (let i = 0; i < docs.length; i++) {
      const doc = docs[i];
      if (this.#sessionOf[doc] === REMOVED) continue;
      if (this.#sessionOf[doc] === ABSENT) this.#live++;
      let session = this.#sessions.get(sessionIds[i]);
      if (session === undefined) this.#sessions.set(sessionIds[i], (session = this.#sessions.size));
      this.#sessionOf[doc] = session;
      this.#roleOf[doc] = ROLES.get(roles[i]) ?? OTHER;
      this.#createdAt[doc] = Number(createdAt[i]);
    }
    this.#end = Math.max(this.#end, highest + 1);
  }

  remove(docs) {
    let highest = 0;
    for (let i = 0; i < docs.length; i++) highest = Math.max(highest, docs[i]);
    this.#cover(highest + 1);
    for (let i = 0; i < docs.length; i++) {
      if (this.#sessionOf[docs[i]] >= 0) this.#live--;
      this.#sessionOf[docs[i]] = REMOVED;
    }
  }

  clear() {
    this.#sessionOf = new Int32Array(0);
    this.#roleOf = new Uint8Array(0);
    this.#createdAt = new Float64Array(0);
    this.#sessions.clear();
    this.#end = 1;
    this.#live = 0;
  }

  /** The live docs, ascending, in one of `sessionIds` (every session when null), with one
   *  of `roles` (any when null) and createdAt in [from, to] (any when from is null). */
  allowed(sessionIds, roles, from, to) {
    const sessions = this.#mask(this.#sessions, sessionIds, this.#sessions.size);
    const roleMask = this.#mask(ROLES, roles, OTHER + 1);
    const dated = from !== null && from !== undefined;
    const found = new Int32Array(this.#live);
    let count = 0;
    for (let doc = 1; doc < this.#end; doc++) {
      const session = this.#sessionOf[doc];
      if (session < 0) continue;
      if (sessions !== null && sessions[session] === 0) continue;
      if (roleMask !== null && roleMask[this.#roleOf[doc]] === 0) continue;
      if (dated && (this.#createdAt[doc] < from || this.#createdAt[doc] > to)) continue;
      found[count++] = doc;
    }
    return found.slice(0, count);
  }

  /** A mark per number for the names given (names never seen match nothing), or null. */
  #mask(numbers, names, size) {
    if (names === null || names === undefined) return null;
    const mask = new Uint8Array(Math.max(size, 1));
    for (const name of names) {
      const number = numbers.get(name);
      if (number !== undefined) mask[number] = 1;
    }
    return mask;
  }

  /** Room for docs below `end`, new ones ABSENT. */
  #cover(end) {
    if (end <= this.#sessionOf.length) return;
    const length = Math.max(end, this.#sessionOf.length * 2, 1024);
    const sessionOf = new Int32Array(length).fill(ABSENT);
    sessionOf.set(this.#sessionOf);
    const roleOf = new Uint8Array(length);
    roleOf.set(this.#roleOf);
    const createdAt = new Float64Array(length);
    createdAt.set(this.#createdAt);
    this.#sessionOf = sessionOf;
    this.#roleOf = roleOf;
    this.#createdAt = createdAt;
  }
}

/** An empty doc scope. */
export function createDocScope() {
  return new DocScope();
}
