// BM25 keyword search over an in-memory inverted index of the messages' terms.
//
// The only copy of the postings in memory: DuckDB keeps each message's length and folded
// text (search_text), this the (doc, term, tf) postings, and a snapshot saves them from
// here (`postings`). Scoring a query here takes well under a millisecond where the SQL
// statement over DuckDB's own postings took 20-35 ms. Scores are Lucene's BM25, in doubles.
//
// Terms are 64-bit hashes. They are held in BigInt64Arrays (one bulk copy in, one native
// sort) and read through Int32Array views of the same memory: a signed high word, then an
// unsigned low word, which is the BigInts' own order without making a BigInt per read.
//
// The postings live in two parts:
// - the base, in CSR form: its distinct terms ascending, and each term's postings (docs
//   ascending, with their tfs) as one stretch of two parallel arrays. A query finds its
//   terms by binary search and reads each one's postings in doc order.
// - the delta: the postings added since the base was last rebuilt, appended in any order,
//   each chained to the previous posting of its term, the chains' heads found through a
//   small hash table of the delta's terms. A plain unsorted log would have every query scan
//   all of it (up to an eighth of the base); the chains cost one table probe per posting
//   added and let a query read only its own terms' postings.
// When the delta reaches an eighth of the base (16,384 postings at least), the two are
// merged into a new base, which drops the removed docs' postings too. A merge costs about
// the base's size and the base grows by an eighth between two merges, so all the merges
// together cost a constant factor (~9) of the postings ever added: linear.
//
// Docs are sequence numbers (≥ 1) and index per-doc typed arrays, as in vector-scan.mjs:
// a doc's length, or a mark for unknown and removed docs. Docs are never reused, so a
// removed doc stays marked (a tombstone) and its postings are skipped until a merge drops
// them. The totals behind N and the average length are kept up to date as docs come and go.
//
// A query scores the base doc by doc, skipping what cannot reach its top k (MaxScore), and
// the delta term by term: see Scorer.

import { TopK } from "./top-k.mjs";

const K1 = 1.2;
const B = 0.75;
const MAX_QUERY_TERMS = 32; // a doc's matched terms are one bit each of a Uint32
/** The delta is merged into the base once it holds this many postings, or a MERGE_RATIO-th
 * of the base if more. */
const MIN_MERGE_POSTINGS = 16_384;
const MERGE_RATIO = 8;
/** Above this k, every matched doc is scored and all are sorted once, instead of being
 * kept in a sorted top-k list (whose insertions cost O(k) each) that pruning works against. */
const SORTED_INSERT_LIMIT = 1024;
/** tfs are held as Uint16 (half the memory of the docs beside them) until one exceeds this:
 * then as Int32, for good. */
const MAX_NARROW_TF = 0xffff;

// What #lengths holds for a doc that is not live; a live doc's entry is its length (≥ 0).
const UNKNOWN = -1;
const REMOVED = -2;
const ADDING = -3; // listed by the add being applied, whose postings of it are taken

// Where each half of a 64-bit term sits in an Int32Array view: platform order, as in the BigInt64Array.
const HIGH = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1 ? 1 : 0;
const LOW = 1 - HIGH;

/** A BigInt64Array's terms as 32-bit words, term i's at [2i, 2i + 1]. */
const wordsOf = (terms) => new Int32Array(terms.buffer, terms.byteOffset, 2 * terms.length);

/** Whether term i of `words` sorts before term j of `otherWords`: BigInt64 order. */
function termBefore(words, i, otherWords, j) {
  const hi = words[2 * i + HIGH];
  const otherHi = otherWords[2 * j + HIGH];
  return hi < otherHi || (hi === otherHi && words[2 * i + LOW] >>> 0 < otherWords[2 * j + LOW] >>> 0);
}

/** Whether term i of `words` is term j of `otherWords`. */
const sameTerm = (words, i, otherWords, j) =>
  words[2 * i + HIGH] === otherWords[2 * j + HIGH] && words[2 * i + LOW] === otherWords[2 * j + LOW];

/** A new array of `length` bigger than `array` (at least doubled), holding its first `used` values. */
function grown(array, length, used = array.length) {
  const bigger = new array.constructor(Math.max(length, 2 * array.length));
  bigger.set(array.subarray(0, used));
  return bigger;
}

// ---- Postings in CSR form: the base, and the sorted runs merged into it. ----

/** `termCount` distinct terms ascending (`terms`, read through `words`); term i's postings at
 * [starts[i], starts[i + 1]) of `docs` and `tfs`, docs ascending. The arrays may run longer. */
class SortedPostings {
  constructor(terms, termCount, starts, docs, tfs) {
    this.terms = terms;
    this.words = wordsOf(terms);
    this.termCount = termCount;
    this.starts = starts;
    this.docs = docs;
    this.tfs = tfs;
  }

  static empty(TfArray) {
    return new SortedPostings(new BigInt64Array(0), 0, new Int32Array(1), new Int32Array(0), new TfArray(0));
  }

  get postingCount() {
    return this.starts[this.termCount];
  }

  /** The index of term (hi, lo), or -1: a binary search. */
  find(hi, lo) {
    const words = this.words;
    const unsignedLo = lo >>> 0;
    let low = 0;
    let high = this.termCount - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const middleHi = words[2 * middle + HIGH];
      if (middleHi < hi) low = middle + 1;
      else if (middleHi > hi) high = middle - 1;
      else {
        const middleLo = words[2 * middle + LOW] >>> 0;
        if (middleLo < unsignedLo) low = middle + 1;
        else if (middleLo > unsignedLo) high = middle - 1;
        else return middle;
      }
    }
    return -1;
  }
}

/** Whether the postings are in (term, doc) order, each pair once: one linear pass. */
function sortedByTermThenDoc(postingDocs, words) {
  for (let p = 1; p < postingDocs.length; p++) {
    const hi = words[2 * p + HIGH];
    const previousHi = words[2 * p - 2 + HIGH];
    if (hi !== previousHi) {
      if (hi < previousHi) return false;
      continue;
    }
    const lo = words[2 * p + LOW] >>> 0;
    const previousLo = words[2 * p - 2 + LOW] >>> 0;
    if (lo !== previousLo) {
      if (lo < previousLo) return false;
      continue;
    }
    if (postingDocs[p] <= postingDocs[p - 1]) return false;
  }
  return true;
}

/** The postings of docs being added, from input sorted by (term, doc), in CSR form: no sort. */
function sortedRun(postingDocs, words, tfs, lengths, TfArray) {
  let postingCount = 0;
  let termCount = 0;
  let hi = 0;
  let lo = 0;
  for (let p = 0; p < postingDocs.length; p++) {
    if (lengths[postingDocs[p]] !== ADDING) continue;
    if (postingCount++ === 0 || words[2 * p + HIGH] !== hi || words[2 * p + LOW] !== lo) {
      termCount++;
      hi = words[2 * p + HIGH];
      lo = words[2 * p + LOW];
    }
  }
  const terms = new BigInt64Array(termCount);
  const termWords = wordsOf(terms);
  const starts = new Int32Array(termCount + 1);
  const docs = new Int32Array(postingCount);
  const runTfs = new TfArray(postingCount);
  let term = -1;
  let out = 0;
  for (let p = 0; p < postingDocs.length; p++) {
    if (lengths[postingDocs[p]] !== ADDING) continue;
    if (term === -1 || !sameTerm(words, p, termWords, term)) {
      term++;
      termWords[2 * term + HIGH] = words[2 * p + HIGH];
      termWords[2 * term + LOW] = words[2 * p + LOW];
      starts[term] = out;
    }
    docs[out] = postingDocs[p];
    runTfs[out++] = tfs[p];
  }
  starts[termCount] = out;
  return new SortedPostings(terms, termCount, starts, docs, runTfs);
}

/** Postings [from, to) copied to `out` onward, only those of live docs if `dropRemoved`;
 * returns the new end. Long stretches are copied in bulk, short ones by a loop (which
 * makes no subarray objects). */
function copyPostings(fromDocs, fromTfs, from, to, docs, tfs, out, lengths, dropRemoved) {
  if (dropRemoved) {
    for (let p = from; p < to; p++) {
      const doc = fromDocs[p];
      if (lengths[doc] < 0) continue;
      docs[out] = doc;
      tfs[out++] = fromTfs[p];
    }
    return out;
  }
  if (to - from > 64) {
    docs.set(fromDocs.subarray(from, to), out);
    tfs.set(fromTfs.subarray(from, to), out);
    return out + to - from;
  }
  for (let p = from; p < to; p++) {
    docs[out] = fromDocs[p];
    tfs[out++] = fromTfs[p];
  }
  return out;
}

/** One term's postings from the base, [a, aEnd), and from the run, [r, rEnd), both in doc
 * order, merged in doc order to `out` onward; returns the new end. */
function mergePostingsByDoc(base, a, aEnd, run, r, rEnd, docs, tfs, out, lengths, dropRemoved) {
  // New docs are mostly later ones (messages as they come): then the run just follows.
  if (a === aEnd || r === rEnd || base.docs[aEnd - 1] < run.docs[r]) {
    out = copyPostings(base.docs, base.tfs, a, aEnd, docs, tfs, out, lengths, dropRemoved);
    return copyPostings(run.docs, run.tfs, r, rEnd, docs, tfs, out, lengths, dropRemoved);
  }
  while (a < aEnd || r < rEnd) {
    const fromBase = r === rEnd || (a < aEnd && base.docs[a] < run.docs[r]);
    const source = fromBase ? base : run;
    const p = fromBase ? a++ : r++;
    const doc = source.docs[p];
    if (dropRemoved && lengths[doc] < 0) continue;
    docs[out] = doc;
    tfs[out++] = source.tfs[p];
  }
  return out;
}

/** The base and a run merged into new sorted postings; with `dropRemoved`, the postings of
 * docs no longer live are left out, and so are the terms left with none. */
function merge(base, run, lengths, dropRemoved, TfArray) {
  if (base.termCount === 0 && !dropRemoved) return run;
  const termCapacity = base.termCount + run.termCount;
  const postingCapacity = base.postingCount + run.postingCount;
  const terms = new BigInt64Array(termCapacity);
  const words = wordsOf(terms);
  const starts = new Int32Array(termCapacity + 1);
  const docs = new Int32Array(postingCapacity);
  const tfs = new TfArray(postingCapacity);
  const baseWords = base.words;
  const runWords = run.words;
  let termCount = 0;
  let out = 0;
  const keepTerm = (fromWords, term, start) => {
    if (out === start) return; // every posting dropped
    words[2 * termCount + HIGH] = fromWords[2 * term + HIGH];
    words[2 * termCount + LOW] = fromWords[2 * term + LOW];
    starts[termCount++] = start;
  };
  let a = 0;
  for (let r = 0; r <= run.termCount; r++) {
    // The base's terms before run term r (all that remain, after the last) go across unchanged.
    let stretchEnd = base.termCount;
    if (r < run.termCount) {
      stretchEnd = a;
      while (stretchEnd < base.termCount && termBefore(baseWords, stretchEnd, runWords, r)) stretchEnd++;
    }
    if (dropRemoved) {
      for (; a < stretchEnd; a++) {
        const start = out;
        out = copyPostings(base.docs, base.tfs, base.starts[a], base.starts[a + 1], docs, tfs, out, lengths, true);
        keepTerm(baseWords, a, start);
      }
    } else if (stretchEnd > a) {
      // Nothing to drop: the whole stretch in three bulk copies, its offsets shifted.
      terms.set(base.terms.subarray(a, stretchEnd), termCount);
      const from = base.starts[a];
      out = copyPostings(base.docs, base.tfs, from, base.starts[stretchEnd], docs, tfs, out, lengths, false);
      const shift = out - base.starts[stretchEnd];
      for (; a < stretchEnd; a++) starts[termCount++] = base.starts[a] + shift;
    }
    if (r === run.termCount) break;
    const start = out;
    const runFrom = run.starts[r];
    const runTo = run.starts[r + 1];
    if (a < base.termCount && sameTerm(baseWords, a, runWords, r)) {
      const [baseFrom, baseTo] = [base.starts[a], base.starts[a + 1]];
      out = mergePostingsByDoc(base, baseFrom, baseTo, run, runFrom, runTo, docs, tfs, out, lengths, dropRemoved);
      a++;
    } else {
      out = copyPostings(run.docs, run.tfs, runFrom, runTo, docs, tfs, out, lengths, dropRemoved);
    }
    keepTerm(runWords, r, start);
  }
  starts[termCount] = out;
  // Trimmed when removals left much unused: the base is the bulk of the memory held.
  if (out < 0.875 * postingCapacity) {
    const [keptTerms, keptStarts] = [terms.slice(0, termCount), starts.slice(0, termCount + 1)];
    return new SortedPostings(keptTerms, termCount, keptStarts, docs.slice(0, out), tfs.slice(0, out));
  }
  return new SortedPostings(terms, termCount, starts, docs, tfs);
}

/** Docs [from, to) and their tfs put in doc order, if they are not (rare: docs added out of order). */
function sortByDoc(docs, tfs, from, to) {
  let sorted = true;
  for (let p = from + 1; p < to && sorted; p++) sorted = docs[p - 1] < docs[p];
  if (sorted) return;
  const order = Array.from({ length: to - from }, (_, i) => from + i).sort((x, y) => docs[x] - docs[y]);
  const sortedDocs = order.map((p) => docs[p]);
  const sortedTfs = order.map((p) => tfs[p]);
  docs.set(sortedDocs, from);
  tfs.set(sortedTfs, from);
}

// ---- The delta: postings as added, chained by term. ----

/** Slot of term (hi, lo) in a table of 2^(32 - shift) slots: multiplicative hashing of both
 * words, so that terms differing in either half spread (the hashes are random, but need not be). */
const slotOf = (hi, lo, shift) => Math.imul(Math.imul(lo, 0x9e3779b1) ^ hi, 0x85ebca6b) >>> shift;

class DeltaPostings {
  /** Distinct terms held, numbered from 0 in order of arrival. */
  termCount = 0;
  postingCount = 0;
  terms = new BigInt64Array(64);
  words = wordsOf(this.terms);
  /** Per term: its latest posting (the head of its chain), and how many it has. */
  heads = new Int32Array(64);
  counts = new Int32Array(64);
  /** Per posting: doc, tf, and the previous posting of its term (-1 at the first). */
  docs = new Int32Array(1024);
  tfs;
  next = new Int32Array(1024);
  /** Open addressing, linear probing: term number + 1 per slot, 0 where free; at most half full. */
  #slots = new Int32Array(128);
  #shift = 32 - 7;

  constructor(TfArray) {
    this.tfs = new TfArray(1024);
  }

  /** The number of term (hi, lo), or -1. */
  find(hi, lo) {
    const slots = this.#slots;
    const words = this.words;
    const mask = slots.length - 1;
    for (let slot = slotOf(hi, lo, this.#shift); ; slot = (slot + 1) & mask) {
      const term = slots[slot] - 1;
      if (term === -1) return -1;
      if (words[2 * term + HIGH] === hi && words[2 * term + LOW] === lo) return term;
    }
  }

  /** Appends the postings of the docs marked ADDING in `lengths` (the others are not taken). */
  append(postingDocs, words, tfs, lengths) {
    this.#reservePostings(this.postingCount + postingDocs.length);
    const docs = this.docs;
    const deltaTfs = this.tfs;
    const next = this.next;
    let count = this.postingCount;
    for (let p = 0; p < postingDocs.length; p++) {
      const doc = postingDocs[p];
      if (lengths[doc] !== ADDING) continue;
      const term = this.#termNumber(words[2 * p + HIGH], words[2 * p + LOW]);
      docs[count] = doc;
      deltaTfs[count] = tfs[p];
      next[count] = this.heads[term];
      this.heads[term] = count;
      this.counts[term]++;
      count++;
    }
    this.postingCount = count;
  }

  /** The postings in CSR form, to merge into the base: the distinct terms sorted natively
   * (BigInt64Array's numeric order is the base's), each chain laid out in doc order. */
  toSorted(TfArray) {
    const termCount = this.termCount;
    const terms = this.terms.slice(0, termCount).sort();
    const words = wordsOf(terms);
    const starts = new Int32Array(termCount + 1);
    const docs = new Int32Array(this.postingCount);
    const tfs = new TfArray(this.postingCount);
    let out = 0;
    for (let i = 0; i < termCount; i++) {
      const term = this.find(words[2 * i + HIGH], words[2 * i + LOW]);
      starts[i] = out;
      out += this.counts[term];
      // A chain runs newest first: written from its far end, it comes out in the order added.
      let at = out;
      for (let p = this.heads[term]; p !== -1; p = this.next[p]) {
        docs[--at] = this.docs[p];
        tfs[at] = this.tfs[p];
      }
      sortByDoc(docs, tfs, starts[i], out);
    }
    starts[termCount] = out;
    return new SortedPostings(terms, termCount, starts, docs, tfs);
  }

  /** Empties the delta, keeping its memory for the next one. */
  reset() {
    this.termCount = 0;
    this.postingCount = 0;
    this.#slots.fill(0);
  }

  widenTfs() {
    this.tfs = Int32Array.from(this.tfs);
  }

  #termNumber(hi, lo) {
    const slots = this.#slots;
    const words = this.words;
    const mask = slots.length - 1;
    let slot = slotOf(hi, lo, this.#shift);
    for (; slots[slot] !== 0; slot = (slot + 1) & mask) {
      const term = slots[slot] - 1;
      if (words[2 * term + HIGH] === hi && words[2 * term + LOW] === lo) return term;
    }
    const term = this.termCount++;
    if (term === this.heads.length) this.#growTerms();
    this.words[2 * term + HIGH] = hi;
    this.words[2 * term + LOW] = lo;
    this.heads[term] = -1;
    this.counts[term] = 0;
    if (2 * this.termCount > slots.length) this.#rehash(2 * slots.length);
    else slots[slot] = term + 1;
    return term;
  }

  #growTerms() {
    this.terms = grown(this.terms, this.terms.length + 1);
    this.words = wordsOf(this.terms);
    this.heads = grown(this.heads, this.terms.length);
    this.counts = grown(this.counts, this.terms.length);
  }

  #rehash(slotCount) {
    const slots = new Int32Array(slotCount);
    const mask = slotCount - 1;
    this.#shift = 32 - Math.log2(slotCount);
    for (let term = 0; term < this.termCount; term++) {
      let slot = slotOf(this.words[2 * term + HIGH], this.words[2 * term + LOW], this.#shift);
      while (slots[slot] !== 0) slot = (slot + 1) & mask;
      slots[slot] = term + 1;
    }
    this.#slots = slots;
  }

  #reservePostings(count) {
    if (count <= this.docs.length) return;
    this.docs = grown(this.docs, count, this.postingCount);
    this.tfs = grown(this.tfs, count, this.postingCount);
    this.next = grown(this.next, count, this.postingCount);
  }
}

// ---- Scoring a query. ----

/** Pruning compares sums of parts added in another order than the score's, and bounds
 * rounded themselves: inflated by this factor, the bounds stay bounds. */
const BOUND_MARGIN = 1 + 1e-9;

/** The first posting of [from, end) whose doc is ≥ doc (end if none): galloping then binary
 * search, since a pruned list is probed at docs far apart. */
function advanceTo(docs, from, end, doc) {
  if (from === end || docs[from] >= doc) return from;
  let low = from; // docs[low] < doc throughout
  let step = 1;
  let high = from + 1;
  while (high < end && docs[high] < doc) {
    low = high;
    step *= 2;
    high = from + step;
  }
  if (high > end) high = end;
  while (high - low > 1) {
    const middle = (low + high) >>> 1;
    if (docs[middle] < doc) low = middle;
    else high = middle;
  }
  return high;
}

/**
 * A query's scoring, and the scratch it reuses from one query to the next.
 *
 * The base is scored doc by doc, since each term's postings there are in doc order: a doc's
 * score is complete when it is offered to the top k, and most postings of common terms are
 * skipped (MaxScore, as Lucene does). A term's part of a score is below its bound, qtf × idf
 * × (K1 + 1), as tf / (tf + norm) < 1. The query's lists, strongest bound first, each drive
 * a pass over their postings, skipping the docs of the lists that drove before (scored
 * already) and looking the weaker lists up (galloping search) for the rest. A doc is
 * dropped as soon as its parts so far and the bounds of the lists not looked up yet cannot
 * reach the k-th best score; a pass stops, and none starts, once the lists left could not
 * reach it together. Rare terms thus set the bar, and common ones are only read through.
 *
 * The delta's chains are in no doc order: they are scored term by term into sums by doc
 * (offered first, so that they raise the bar for the base), and so is everything when k is
 * too large for a top-k list. A doc's postings are all in the base or all in the delta
 * (added in one call, merged together), so the two never mix.
 *
 * Either way, a doc's score adds its terms' parts in the query's term order, each part
 * computed operation for operation as the SQL writes it: scores are the same to the bit,
 * ties included, whichever path computed them.
 */
class Scorer {
  // Of the query being scored.
  lengths = new Int32Array(0);
  avgdl = 1;
  allowed = null; // the allow marks when there is an allow list, else null
  // Per doc, all zeros between queries (a query resets only the docs it touched, so it
  // allocates and clears nothing in proportion to the store): term-at-a-time score sums,
  // matched masks (bit j for query term j), allow marks, and the docs with a sum.
  scores = new Float64Array(0);
  matched = new Uint32Array(0);
  allowMarks = new Uint8Array(0);
  touched = new Int32Array(0);
  touchedCount = 0;
  // The base's lists of the query, ascending by bound: term number, weight (qtf × idf),
  // postings [start, end) and a cursor in them, and bound: the most list i's part can be
  // (which scoreBase turns into the most lists 0..i can add to a score together).
  listCount = 0;
  listTerm = new Int32Array(MAX_QUERY_TERMS);
  listWeight = new Float64Array(MAX_QUERY_TERMS);
  listStart = new Int32Array(MAX_QUERY_TERMS);
  listCursor = new Int32Array(MAX_QUERY_TERMS);
  listEnd = new Int32Array(MAX_QUERY_TERMS);
  listBound = new Float64Array(MAX_QUERY_TERMS);
  partOfTerm = new Float64Array(MAX_QUERY_TERMS); // a doc's parts, by query term
  probedMatched = 0;

  /** Room for docs 0 to slots - 1. */
  reserve(slots) {
    if (slots <= this.scores.length) return;
    this.scores = new Float64Array(slots);
    this.matched = new Uint32Array(slots);
    this.allowMarks = new Uint8Array(slots);
    this.touched = new Int32Array(slots);
  }

  /** Marks the live docs of `allow` (each once); returns how many, with the count and total
   * length of those with terms (the scoped N and avgdl). */
  markAllowed(allow, lengths) {
    const marks = this.allowMarks;
    let count = 0;
    let statDocs = 0;
    let statLength = 0;
    for (let i = 0; i < allow.length; i++) {
      const doc = allow[i];
      const length = lengths[doc];
      if (!(length >= 0) || marks[doc] === 1) continue; // unknown, removed, out of range, or repeated
      marks[doc] = 1;
      count++;
      if (length > 0) {
        statDocs++;
        statLength += length;
      }
    }
    return { count, statDocs, statLength };
  }

  unmarkAllowed(allow) {
    const marks = this.allowMarks;
    for (let i = 0; i < allow.length; i++) {
      const doc = allow[i];
      if (doc >= 0 && doc < marks.length) marks[doc] = 0;
    }
  }

  /** Starts a query over docs of these lengths (< 0: not live); `allowed`: the allow marks or null. */
  begin(lengths, avgdl, allowed) {
    this.lengths = lengths;
    this.avgdl = avgdl;
    this.allowed = allowed;
    this.listCount = 0;
  }

  /** How many of postings [from, to) and of the chain from `head` are of docs that count:
   * allowed ones with `marks`, else live ones. */
  count(docs, from, to, chainDocs, next, head, marks) {
    const lengths = this.lengths;
    let count = 0;
    if (marks !== null) {
      for (let p = from; p < to; p++) count += marks[docs[p]];
      for (let p = head; p !== -1; p = next[p]) count += marks[chainDocs[p]];
    } else {
      for (let p = from; p < to; p++) if (lengths[docs[p]] >= 0) count++;
      for (let p = head; p !== -1; p = next[p]) if (lengths[chainDocs[p]] >= 0) count++;
    }
    return count;
  }

  /** Adds query term j's parts to the sums of the eligible docs of postings [from, to). */
  sumRange(docs, tfs, from, to, j, weight) {
    const { lengths, avgdl, allowed, scores, matched, touched } = this;
    const bit = 1 << j;
    let touchedCount = this.touchedCount;
    for (let p = from; p < to; p++) {
      const doc = docs[p];
      if (allowed !== null && allowed[doc] === 0) continue;
      const length = lengths[doc];
      if (length < 0) continue; // removed: its postings stay until the next merge
      const tf = tfs[p];
      if (matched[doc] === 0) touched[touchedCount++] = doc;
      matched[doc] |= bit;
      scores[doc] += (weight * tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * length) / avgdl));
    }
    this.touchedCount = touchedCount;
  }

  /** sumRange for a delta chain. */
  sumChain(docs, tfs, next, head, j, weight) {
    const { lengths, avgdl, allowed, scores, matched, touched } = this;
    const bit = 1 << j;
    let touchedCount = this.touchedCount;
    for (let p = head; p !== -1; p = next[p]) {
      const doc = docs[p];
      if (allowed !== null && allowed[doc] === 0) continue;
      const length = lengths[doc];
      if (length < 0) continue;
      const tf = tfs[p];
      if (matched[doc] === 0) touched[touchedCount++] = doc;
      matched[doc] |= bit;
      scores[doc] += (weight * tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * length) / avgdl));
    }
    this.touchedCount = touchedCount;
  }

  /** Offers the summed docs to `top`, and zeros their sums. */
  offerSums(top) {
    const { scores, matched, touched, touchedCount } = this;
    for (let i = 0; i < touchedCount; i++) {
      const doc = touched[i];
      const score = scores[doc];
      if (score >= top.floor) top.offer(score, doc, matched[doc]);
      scores[doc] = 0;
      matched[doc] = 0;
    }
    this.touchedCount = 0;
  }

  /** The best `limit` summed docs, by sorting them all (for a large k); zeros their sums. */
  rankSums(limit) {
    const { scores, matched, touched, touchedCount } = this;
    const docs = touched
      .slice(0, touchedCount)
      .sort((a, b) => scores[b] - scores[a] || a - b)
      .slice(0, limit);
    const result = {
      docs,
      scores: Float64Array.from(docs, (doc) => scores[doc]),
      matched: Uint32Array.from(docs, (doc) => matched[doc]),
    };
    for (let i = 0; i < touchedCount; i++) {
      scores[touched[i]] = 0;
      matched[touched[i]] = 0;
    }
    this.touchedCount = 0;
    return result;
  }

  /** Query term j's postings [from, to) of the base, for scoreBase. */
  addBaseList(j, from, to, weight) {
    // A part is below it (0 for a weight ≤ 0, which consistent data never gives).
    const bound = Math.max(0, weight * (K1 + 1));
    let i = this.listCount++;
    for (; i > 0 && this.listBound[i - 1] > bound; i--) {
      this.listTerm[i] = this.listTerm[i - 1];
      this.listWeight[i] = this.listWeight[i - 1];
      this.listStart[i] = this.listStart[i - 1];
      this.listEnd[i] = this.listEnd[i - 1];
      this.listBound[i] = this.listBound[i - 1];
    }
    this.listTerm[i] = j;
    this.listWeight[i] = weight;
    this.listStart[i] = from;
    this.listEnd[i] = to;
    this.listBound[i] = bound;
  }

  /** Scores the base's docs of the lists added, offering each to `top`. */
  scoreBase(base, top) {
    const { listCount, listBound } = this;
    for (let i = 1; i < listCount; i++) listBound[i] += listBound[i - 1]; // now cumulative
    for (let i = 0; i < listCount; i++) listBound[i] *= BOUND_MARGIN;
    // The docs left after each pass hold none of the lists that drove: lists 0..driver at most.
    for (let driver = listCount - 1; driver >= 0 && listBound[driver] >= top.floor; driver--) {
      this.#drive(base.docs, base.tfs, top, driver);
    }
  }

  /** One pass: the docs of list `driver`, but for those of stronger lists (scored already),
   * each with the parts the weaker lists add, looked up while the doc can still make it. */
  #drive(docs, tfs, top, driver) {
    const { lengths, avgdl, allowed, listCount, listTerm, listWeight, listStart, listCursor, listEnd, listBound } = this;
    listCursor.set(listStart); // the other lists are searched from their start again
    const term = listTerm[driver];
    const bit = 1 << term;
    const weight = listWeight[driver];
    const weakerBound = driver > 0 ? listBound[driver - 1] : 0;
    const end = listEnd[driver];
    let floor = top.floor;
    for (let cursor = listStart[driver]; cursor < end; cursor++) {
      const doc = docs[cursor];
      const length = lengths[doc];
      if (allowed === null ? length < 0 : allowed[doc] === 0) continue;
      const tf = tfs[cursor];
      const norm = K1 * (1 - B + (B * length) / avgdl); // the SQL's expression, hoisted: the same value
      const part = (weight * tf * (K1 + 1)) / (tf + norm);
      if ((part + weakerBound) * BOUND_MARGIN < floor) continue; // most docs of common terms stop here
      if (driver < listCount - 1 && this.#inStrongerList(docs, doc, driver)) continue;
      let score = part;
      let matched = bit;
      if (driver > 0) {
        this.partOfTerm[term] = part;
        if (this.#probe(docs, tfs, doc, norm, driver, part, bit, floor) === -1) continue;
        matched = this.probedMatched;
        if (matched !== bit) score = this.#sum(matched);
      }
      if (score < floor) continue;
      top.offer(score, doc, matched);
      floor = top.floor; // never above this pass's bound: its docs hold lists 0..driver at most
    }
  }

  /** Whether `doc` is in a list stronger than `driver` (their cursors only move forward in a pass). */
  #inStrongerList(docs, doc, driver) {
    const { listCount, listCursor, listEnd } = this;
    for (let i = driver + 1; i < listCount; i++) {
      const cursor = advanceTo(docs, listCursor[i], listEnd[i], doc);
      listCursor[i] = cursor;
      if (cursor < listEnd[i] && docs[cursor] === doc) return true;
    }
    return false;
  }

  /** The matched mask once the lists weaker than `driver` are looked up for `doc`, the
   * strongest first, while it can still reach the floor; -1 if it cannot. Parts found go to
   * partOfTerm, the mask to probedMatched (returned, it could not be told from -1 when it
   * has bit 31 set). */
  #probe(docs, tfs, doc, norm, driver, partial, matched, floor) {
    const { listTerm, listWeight, listCursor, listEnd, listBound, partOfTerm } = this;
    for (let i = driver - 1; i >= 0; i--) {
      if ((partial + listBound[i]) * BOUND_MARGIN < floor) return -1;
      const cursor = advanceTo(docs, listCursor[i], listEnd[i], doc);
      listCursor[i] = cursor;
      if (cursor === listEnd[i] || docs[cursor] !== doc) continue;
      listCursor[i] = cursor + 1;
      const tf = tfs[cursor];
      const part = (listWeight[i] * tf * (K1 + 1)) / (tf + norm);
      partOfTerm[listTerm[i]] = part;
      partial += part;
      matched |= 1 << listTerm[i];
    }
    this.probedMatched = matched;
    return 0;
  }

  /** A doc's score: its parts added in the query's term order. */
  #sum(matched) {
    const partOfTerm = this.partOfTerm;
    let score = 0;
    for (let bits = matched; bits !== 0; bits &= bits - 1) score += partOfTerm[31 - Math.clz32(bits & -bits)];
    return score;
  }
}

const noResult = () => ({ docs: new Int32Array(0), scores: new Float64Array(0), matched: new Uint32Array(0) });

// ---- The index. ----

export class TermIndex {
  /** Per doc: its length if live, else UNKNOWN or REMOVED (ADDING during an add). */
  #lengths = new Int32Array(0);
  /** Docs removed before #lengths reached them: marked REMOVED when it does. */
  #removedAhead = new Set();
  #liveDocs = 0;
  /** BM25's N and total length: the live docs with length > 0. */
  #statDocs = 0;
  #statLength = 0;
  /** Docs removed since the last merge, and their total length (≥ their postings, left in place). */
  #deadDocs = 0;
  #deadLength = 0;
  #TfArray = Uint16Array;
  #base = SortedPostings.empty(Uint16Array);
  #delta = new DeltaPostings(Uint16Array);
  #scorer = new Scorer();

  /** Number of live docs (added and not removed), those of length 0 included. */
  get size() {
    return this.#liveDocs;
  }

  /**
   * Adds docs and their postings. A doc live already, or removed once, is ignored with its
   * postings (docs are never reused); a doc listed twice counts once, with its first length.
   * Postings of docs not listed are ignored. Postings may come in any order; already sorted
   * by (term, doc), as a snapshot's are, a large batch is laid out without sorting.
   * @param {Int32Array} docs doc numbers, ≥ 1
   * @param {Int32Array} lengths per doc: its BM25 length, the sum of its tfs (0: no terms)
   * @param {Int32Array} postingDocs one per (doc, term) pair
   * @param {BigInt64Array} terms the pair's term hash
   * @param {Int32Array} tfs how often the doc holds the term, ≥ 1
   */
  add(docs, lengths, postingDocs, terms, tfs) {
    if (lengths.length !== docs.length) {
      throw new RangeError(`expected a length per doc: ${docs.length} docs, ${lengths.length} lengths`);
    }
    if (terms.length !== postingDocs.length || tfs.length !== postingDocs.length) {
      const counts = `${postingDocs.length} posting docs, ${terms.length} terms, ${tfs.length} tfs`;
      throw new RangeError(`expected a term and a tf per posting: ${counts}`);
    }
    if (!(terms instanceof BigInt64Array)) throw new TypeError("terms must be a BigInt64Array");
    let largestDoc = 0;
    for (let i = 0; i < docs.length; i++) {
      if (!(docs[i] >= 1)) throw new RangeError(`docs must be ≥ 1, not ${docs[i]}`);
      if (!(lengths[i] >= 0)) throw new RangeError(`lengths must be ≥ 0, not ${lengths[i]} (doc ${docs[i]})`);
      largestDoc = Math.max(largestDoc, docs[i]);
    }
    let largestTf = 0;
    for (let p = 0; p < tfs.length; p++) {
      if (!(tfs[p] >= 1)) throw new RangeError(`tfs must be ≥ 1, not ${tfs[p]} (doc ${postingDocs[p]})`);
      largestTf = Math.max(largestTf, tfs[p]);
    }
    this.#coverDocs(largestDoc);
    if (largestTf > MAX_NARROW_TF && this.#TfArray !== Int32Array) this.#widenTfs();

    const docLengths = this.#lengths;
    let taken = 0;
    for (let i = 0; i < docs.length; i++) {
      if (docLengths[docs[i]] !== UNKNOWN) continue;
      docLengths[docs[i]] = ADDING;
      taken++;
    }
    if (taken === 0) return;
    const words = wordsOf(terms);
    // A batch that would cause a merge anyway, in (term, doc) order already, is merged as it is.
    const run =
      postingDocs.length >= this.#mergeThreshold() && sortedByTermThenDoc(postingDocs, words)
        ? sortedRun(postingDocs, words, tfs, docLengths, this.#TfArray)
        : null;
    if (run === null) this.#delta.append(postingDocs, words, tfs, docLengths);
    for (let i = 0; i < docs.length; i++) {
      const doc = docs[i];
      if (docLengths[doc] !== ADDING) continue; // not taken, or listed before
      docLengths[doc] = lengths[i];
      this.#liveDocs++;
      if (lengths[i] > 0) {
        this.#statDocs++;
        this.#statLength += lengths[i];
      }
    }
    if (run !== null) {
      if (this.#delta.postingCount > 0) this.#mergeDelta(); // a merge drops every dead posting, the delta's too
      this.#mergeIntoBase(run);
    } else if (this.#delta.postingCount >= this.#mergeThreshold()) {
      this.#mergeDelta();
    }
  }

  /**
   * Removes docs, for good: a doc removed (known or not) is ignored by any later add.
   * @param {Int32Array | number[]} docs
   */
  remove(docs) {
    const lengths = this.#lengths;
    for (let i = 0; i < docs.length; i++) {
      const doc = docs[i];
      if (!Number.isInteger(doc) || doc < 1) continue; // cannot be added either
      if (doc >= lengths.length) {
        this.#removedAhead.add(doc);
        continue;
      }
      const length = lengths[doc];
      lengths[doc] = REMOVED;
      if (length < 0) continue; // unknown, or removed already
      this.#liveDocs--;
      this.#deadDocs++;
      this.#deadLength += length;
      if (length === 0) continue;
      this.#statDocs--;
      this.#statLength -= length;
    }
    // Many dead postings slow queries (skipped one by one, and counted for df): drop them.
    if (this.#deadLength >= this.#mergeThreshold()) this.#mergeDelta();
  }

  /**
   * Every live posting, in (term, doc) order, as `add` takes them back: what a snapshot
   * saves. The delta, and the postings of removed docs, are merged away first.
   * @returns {{ docs: Int32Array, terms: BigInt64Array, tfs: Int32Array }}
   */
  postings() {
    if (this.#delta.postingCount > 0 || this.#deadDocs > 0) this.#mergeDelta();
    const base = this.#base;
    const count = base.postingCount;
    const terms = new BigInt64Array(count);
    for (let t = 0; t < base.termCount; t++) terms.fill(base.terms[t], base.starts[t], base.starts[t + 1]);
    return { docs: base.docs.slice(0, count), terms, tfs: Int32Array.from(base.tfs.subarray(0, count)) };
  }

  /** Empties the index, tombstones too: as new. */
  clear() {
    this.#lengths = new Int32Array(0);
    this.#removedAhead.clear();
    this.#liveDocs = 0;
    this.#statDocs = 0;
    this.#statLength = 0;
    this.#deadDocs = 0;
    this.#deadLength = 0;
    this.#TfArray = Uint16Array;
    this.#base = SortedPostings.empty(Uint16Array);
    this.#delta = new DeltaPostings(Uint16Array);
    this.#scorer = new Scorer();
  }

  /**
   * The k live docs holding any of the query's terms with the best BM25 scores, best first,
   * ties by smaller doc.
   * @param {BigInt64Array} terms the query's distinct term hashes, at most 32
   * @param {Int32Array} qtfs per term: how often the query holds it (≥ 1)
   * @param {number} k
   * @param {Int32Array | null} [allow] if given, only these docs may be returned (repeats,
   *   unknown and removed docs are ignored)
   * @param {boolean} [scopedStats] with `allow`: N, the average length and each term's df are
   *   those of the allowed docs, not of the whole index
   * @returns {{ docs: Int32Array, scores: Float64Array, matched: Uint32Array }} matched[i]
   *   has bit j set when docs[i] holds terms[j]
   */
  topK(terms, qtfs, k, allow = null, scopedStats = false) {
    if (!(terms instanceof BigInt64Array)) throw new TypeError("terms must be a BigInt64Array");
    if (terms.length > MAX_QUERY_TERMS) {
      throw new RangeError(`at most ${MAX_QUERY_TERMS} query terms, not ${terms.length}`);
    }
    if (qtfs.length !== terms.length) {
      throw new RangeError(`expected a qtf per query term: ${terms.length} terms, ${qtfs.length} qtfs`);
    }
    for (let j = 0; j < qtfs.length; j++) {
      if (!(qtfs[j] >= 1)) throw new RangeError(`qtfs must be ≥ 1, not ${qtfs[j]}`);
    }
    const limit = k > 0 ? Math.floor(k) : 0;
    if (limit === 0 || terms.length === 0 || this.#liveDocs === 0) return noResult();

    const lengths = this.#lengths;
    const scorer = this.#scorer;
    scorer.reserve(lengths.length);
    let statDocs = this.#statDocs;
    let statLength = this.#statLength;
    let candidates = this.#liveDocs;
    let allowed = null;
    if (allow !== null) {
      const marked = scorer.markAllowed(allow, lengths);
      candidates = marked.count;
      allowed = scorer.allowMarks;
      if (scopedStats) ({ statDocs, statLength } = marked);
    }
    const result =
      candidates === 0
        ? noResult()
        : this.#search(terms, qtfs, limit, allowed, scopedStats, statDocs, statLength, candidates);
    if (allow !== null) scorer.unmarkAllowed(allow);
    return result;
  }

  /** topK once the allowed docs are marked: `candidates` docs may be returned. */
  #search(terms, qtfs, limit, allowed, scopedStats, statDocs, statLength, candidates) {
    const scorer = this.#scorer;
    const scopedDf = allowed !== null && scopedStats;
    scorer.begin(this.#lengths, statDocs > 0 ? Math.max(statLength / statDocs, 1) : 1, allowed);
    const byDoc = limit <= SORTED_INSERT_LIMIT; // else every match is summed, then sorted
    const base = this.#base;
    const delta = this.#delta;
    const words = wordsOf(terms);
    for (let j = 0; j < terms.length; j++) {
      const hi = words[2 * j + HIGH];
      const lo = words[2 * j + LOW];
      const baseTerm = base.find(hi, lo);
      const from = baseTerm === -1 ? 0 : base.starts[baseTerm];
      const to = baseTerm === -1 ? 0 : base.starts[baseTerm + 1];
      const deltaTerm = delta.find(hi, lo);
      const head = deltaTerm === -1 ? -1 : delta.heads[deltaTerm];
      if (from === to && head === -1) continue;
      // df: the postings held, unless some are of removed docs or only the allowed count.
      const df =
        scopedDf || this.#deadDocs > 0
          ? scorer.count(base.docs, from, to, delta.docs, delta.next, head, scopedDf ? allowed : null)
          : to - from + (deltaTerm === -1 ? 0 : delta.counts[deltaTerm]);
      if (df === 0) continue;
      const weight = qtfs[j] * Math.log(1 + (statDocs - df + 0.5) / (df + 0.5));
      if (head !== -1) scorer.sumChain(delta.docs, delta.tfs, delta.next, head, j, weight);
      if (from === to) continue;
      if (byDoc) scorer.addBaseList(j, from, to, weight);
      else scorer.sumRange(base.docs, base.tfs, from, to, j, weight);
    }
    if (!byDoc) return scorer.rankSums(limit);
    const top = new TopK(Math.min(limit, candidates));
    scorer.offerSums(top); // the delta's docs first: the floor they set prunes the base
    scorer.scoreBase(base, top);
    const { docs, scores, tags } = top.result();
    return { docs, scores, matched: tags };
  }

  #mergeThreshold() {
    return Math.max(MIN_MERGE_POSTINGS, this.#base.postingCount / MERGE_RATIO);
  }

  #mergeDelta() {
    this.#mergeIntoBase(this.#delta.toSorted(this.#TfArray));
    this.#delta.reset();
  }

  /** The run merged into the base. Callers merge the delta first (or as the run), so that
   * afterwards no posting of a removed doc is left anywhere. */
  #mergeIntoBase(run) {
    this.#base = merge(this.#base, run, this.#lengths, this.#deadDocs > 0, this.#TfArray);
    this.#deadDocs = 0;
    this.#deadLength = 0;
  }

  #widenTfs() {
    this.#TfArray = Int32Array;
    this.#base.tfs = Int32Array.from(this.#base.tfs);
    this.#delta.widenTfs();
  }

  /** Grows the per-doc arrays to hold `largestDoc`. */
  #coverDocs(largestDoc) {
    const lengths = this.#lengths;
    if (largestDoc < lengths.length) return;
    const covering = new Int32Array(Math.max(largestDoc + 1, 2 * lengths.length, 1024)).fill(UNKNOWN);
    covering.set(lengths);
    for (const doc of this.#removedAhead) {
      if (doc >= covering.length) continue;
      covering[doc] = REMOVED;
      this.#removedAhead.delete(doc);
    }
    this.#lengths = covering;
  }
}

/** An empty term index. */
export function createTermIndex() {
  return new TermIndex();
}
