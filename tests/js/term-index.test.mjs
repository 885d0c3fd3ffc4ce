// web/worker/term-index.mjs against a naive BM25 on random data.
// Run: node --test tests/js/
import assert from "node:assert/strict";
import { test } from "node:test";

import { createTermIndex, TermIndex } from "../../web/worker/term-index.mjs";
import { randomSource } from "./random-source.mjs";

const K1 = 1.2;
const B = 0.75;
const MERGE_POSTINGS = 16_384; // the module's smallest merge threshold

/** A 64-bit signed term from its two 32-bit halves. */
const term = (hi, lo) => BigInt.asIntN(64, (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0));

/** `size` distinct terms in random order: random ones, negative ones among them, pairs that
 * differ only in their high or only in their low 32 bits, and the extremes. */
function vocabulary(random, size) {
  const word = () => Math.floor(random() * 2 ** 32);
  const terms = new Set([0n, 1n, -1n, 2n ** 63n - 1n, -(2n ** 63n), term(0, 0x8000_0000), term(0x8000_0000, 0)]);
  terms.add(term(1, 0)).add(term(0, 1)).add(term(-1, 1)).add(term(1, -1));
  while (terms.size < size) {
    const hi = word();
    const lo = word();
    terms.add(term(hi, lo));
    if (random() < 0.2) terms.add(term(hi ^ (1 << Math.floor(random() * 32)), lo));
    if (random() < 0.2) terms.add(term(hi, lo ^ (1 << Math.floor(random() * 32))));
  }
  const shuffled = [...terms].slice(0, size);
  shuffle(random, shuffled);
  return shuffled;
}

function shuffle(random, items) {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}

/** Skewed towards the vocabulary's first terms, so that some are common and most rare. */
const pickTerm = (random, vocab) => vocab[Math.floor(vocab.length * random() ** 3)];

/** A batch for add(): each doc 0-8 distinct terms (a few have none), tfs mostly 1-2, but
 * for a few long docs with tfs in the hundreds (whose parts come close to a term's bound,
 * where pruning must still keep them); the postings in doc order, in (term, doc) order
 * ("sorted") or shuffled. */
function makeBatch(random, docNumbers, vocab, order = "doc") {
  const postings = [];
  const lengths = [];
  for (const doc of docNumbers) {
    const distinct = random() < 0.08 ? 0 : 1 + Math.floor(random() * 8);
    const long = random() < 0.03;
    const counts = new Map();
    while (counts.size < distinct) {
      counts.set(pickTerm(random, vocab), long ? 1 + Math.floor(random() * 400) : 1 + Math.floor(random() ** 3 * 4));
    }
    let length = 0;
    for (const [t, tf] of counts) {
      postings.push([doc, t, tf]);
      length += tf;
    }
    lengths.push(length);
  }
  if (order === "sorted") postings.sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : a[0] - b[0]));
  if (order === "shuffled") shuffle(random, postings);
  return batchOf(docNumbers, lengths, postings);
}

/** add()'s arguments from docs, their lengths and [doc, term, tf] postings. */
const batchOf = (docs, lengths, postings) => ({
  docs: Int32Array.from(docs),
  lengths: Int32Array.from(lengths),
  postingDocs: Int32Array.from(postings, ([doc]) => doc),
  terms: BigInt64Array.from(postings, ([, t]) => t),
  tfs: Int32Array.from(postings, ([, , tf]) => tf),
});

const addBatch = (index, model, batch) => {
  index.add(batch.docs, batch.lengths, batch.postingDocs, batch.terms, batch.tfs);
  model.add(batch);
};

/** What the index should hold, kept plainly: live docs' lengths and postings, which live
 * docs hold each term, and tombstones. */
class Model {
  lengths = new Map(); // live doc -> length
  postings = new Map(); // live doc -> Map(term -> tf)
  holders = new Map(); // term -> Set of the live docs holding it
  removed = new Set();

  add({ docs, lengths, postingDocs, terms, tfs }) {
    const taken = new Map();
    docs.forEach((doc, i) => {
      if (!this.lengths.has(doc) && !this.removed.has(doc) && !taken.has(doc)) taken.set(doc, lengths[i]);
    });
    for (const [doc, length] of taken) {
      this.lengths.set(doc, length);
      this.postings.set(doc, new Map());
    }
    postingDocs.forEach((doc, p) => {
      if (!taken.has(doc)) return;
      this.postings.get(doc).set(terms[p], tfs[p]);
      if (!this.holders.has(terms[p])) this.holders.set(terms[p], new Set());
      this.holders.get(terms[p]).add(doc);
    });
  }

  remove(docs) {
    for (const doc of docs) {
      for (const t of this.postings.get(doc)?.keys() ?? []) this.holders.get(t).delete(doc);
      this.lengths.delete(doc);
      this.postings.delete(doc);
      this.removed.add(doc);
    }
  }

  /** BM25 as the SQL computes it, written out: every doc holding a query term scored, then sorted. */
  expectedTopK(terms, qtfs, k, allow, scopedStats) {
    const allowed = allow === null ? null : new Set([...allow].filter((doc) => this.lengths.has(doc)));
    const statsDocs = allowed !== null && scopedStats ? [...allowed] : [...this.lengths.keys()];
    const withTerms = statsDocs.filter((doc) => this.lengths.get(doc) > 0);
    const n = withTerms.length;
    const avgdl = n > 0 ? Math.max(withTerms.reduce((sum, doc) => sum + this.lengths.get(doc), 0) / n, 1) : 1;
    const holdersOf = (t) => [...(this.holders.get(t) ?? [])];
    const dfs = [...terms].map((t) =>
      allowed !== null && scopedStats ? holdersOf(t).filter((doc) => allowed.has(doc)).length : holdersOf(t).length,
    );
    const candidates = new Set([...terms].flatMap(holdersOf).filter((doc) => allowed === null || allowed.has(doc)));
    const scored = [];
    for (const doc of candidates) {
      let score = 0;
      let matched = 0;
      [...terms].forEach((t, j) => {
        const tf = this.postings.get(doc).get(t);
        if (tf === undefined) return;
        const [qtf, df, length] = [qtfs[j], dfs[j], this.lengths.get(doc)];
        const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
        score += (qtf * idf * tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * length) / avgdl));
        matched = (matched | (1 << j)) >>> 0;
      });
      scored.push({ doc, score, matched });
    }
    scored.sort((a, b) => b.score - a.score || a.doc - b.doc);
    return scored.slice(0, Math.max(0, k));
  }
}

function assertMatches(index, model, terms, qtfs, k, allow = null, scopedStats = false) {
  const found = index.topK(terms, qtfs, k, allow, scopedStats);
  const expected = model.expectedTopK(terms, qtfs, k, allow, scopedStats);
  assert.ok(found.docs instanceof Int32Array && found.scores instanceof Float64Array);
  assert.ok(found.matched instanceof Uint32Array);
  const context = `k ${k}, ${allow === null ? "no allow" : `allow ${allow.length}`}, scoped ${scopedStats}`;
  assert.deepEqual([...found.docs], expected.map(({ doc }) => doc), context);
  expected.forEach(({ score, matched }, i) => {
    const error = Math.abs(found.scores[i] - score);
    const message = `${context}: doc ${found.docs[i]} scored ${found.scores[i]}, not ${score}`;
    assert.ok(error <= 1e-9 * Math.abs(score), message);
    assert.equal(found.matched[i], matched, context);
  });
  return found;
}

/** A query of 1-5 distinct terms, now and then one the index does not hold. */
function randomQuery(random, vocab) {
  const count = 1 + Math.floor(random() * 5);
  const terms = new Set();
  const absent = () => term(0x1234_5678, Math.floor(random() * 1e6));
  while (terms.size < count) terms.add(random() < 0.1 ? absent() : pickTerm(random, vocab));
  return {
    terms: BigInt64Array.from(terms),
    qtfs: Int32Array.from(terms, () => (random() < 0.2 ? 2 : 1)),
  };
}

/** Queries checked with no allow list and with allow lists that repeat docs and name
 * unknown and removed ones, both with scoped and with global statistics. */
function assertQueries(index, model, random, vocab, queries, ks = [10]) {
  const live = [...model.lengths.keys()];
  const some = (share) => live.filter(() => random() < share);
  const few = some(0.05);
  const allowLists = [
    null,
    Int32Array.from([...few, ...few, 0, -3, 9_999_999, ...[...model.removed].slice(0, 20)]),
    Int32Array.from([...some(0.5), ...some(0.2)]),
  ];
  for (let q = 0; q < queries; q++) {
    const { terms, qtfs } = randomQuery(random, vocab);
    for (const k of ks) {
      for (const allow of allowLists) {
        assertMatches(index, model, terms, qtfs, k, allow, false);
        if (allow !== null) assertMatches(index, model, terms, qtfs, k, allow, true);
      }
    }
  }
}

test("createTermIndex makes an empty TermIndex, which finds nothing", () => {
  const index = createTermIndex();
  assert.ok(index instanceof TermIndex);
  assert.equal(index.size, 0);
  const model = new Model();
  const terms = BigInt64Array.of(5n, -5n);
  const qtfs = Int32Array.of(1, 2);
  assertMatches(index, model, terms, qtfs, 10);
  assertMatches(index, model, terms, qtfs, 10, Int32Array.of(1, 2), true);
  assertMatches(index, model, new BigInt64Array(0), new Int32Array(0), 10);
});

test("lengths that do not match throw a RangeError, and change nothing", () => {
  const index = createTermIndex();
  const one = Int32Array.of(1);
  assert.throws(() => index.add(Int32Array.of(1, 2), one, one, BigInt64Array.of(7n), one), RangeError);
  assert.throws(() => index.add(one, one, Int32Array.of(1, 1), BigInt64Array.of(7n), one), RangeError);
  assert.throws(() => index.add(one, one, one, BigInt64Array.of(7n, 8n), one), RangeError);
  assert.throws(() => index.add(one, one, one, BigInt64Array.of(7n), Int32Array.of(1, 1)), RangeError);
  assert.throws(() => index.add(Int32Array.of(0), one, one, BigInt64Array.of(7n), one), RangeError); // docs ≥ 1
  assert.throws(() => index.add(one, Int32Array.of(-1), one, BigInt64Array.of(7n), one), RangeError);
  assert.throws(() => index.add(one, one, one, BigInt64Array.of(7n), Int32Array.of(0)), RangeError); // tfs ≥ 1
  assert.throws(() => index.topK(BigInt64Array.of(7n), Int32Array.of(1, 1), 10), RangeError);
  assert.throws(() => index.topK(new BigInt64Array(33), new Int32Array(33).fill(1), 10), RangeError);
  assert.throws(() => index.topK(BigInt64Array.of(7n), Int32Array.of(0), 10), RangeError); // qtfs ≥ 1
  assert.throws(() => index.add(one, one, one, Int32Array.of(7), one), TypeError);
  assert.throws(() => index.topK([7n], one, 10), TypeError);
  assert.equal(index.size, 0);
  index.add(one, one, one, BigInt64Array.of(7n), one);
  assert.equal(index.size, 1);
  assert.deepEqual([...index.topK(BigInt64Array.of(7n), one, 10).docs], [1]);
});

test("many small adds, crossing the merge threshold several times, with removes between", () => {
  const random = randomSource(1);
  const vocab = vocabulary(random, 3000);
  const index = createTermIndex();
  const model = new Model();
  let next = 1;
  let checkedAt = 0;
  let postingsAdded = 0;
  while (postingsAdded < 5 * MERGE_POSTINGS) {
    const docs = Array.from({ length: 1 + Math.floor(random() * 20) }, () => next++);
    const batch = makeBatch(random, docs, vocab);
    addBatch(index, model, batch);
    postingsAdded += batch.postingDocs.length;
    if (random() < 0.05) {
      const doomed = [...model.lengths.keys()].filter(() => random() < 0.01);
      doomed.push(next + 5, 999_999); // unknown yet: later adds of them are ignored
      index.remove(Int32Array.from(doomed));
      model.remove(doomed);
    }
    assert.equal(index.size, model.lengths.size);
    if (next - checkedAt > 1500) {
      checkedAt = next;
      assertQueries(index, model, random, vocab, 3);
    }
  }
  assertQueries(index, model, random, vocab, 10, [1, 10, 100, 2000]);
});

test("bulk adds, sorted by (term, doc) or not, into an empty index and into a filled one", () => {
  for (const order of ["sorted", "shuffled", "doc"]) {
    const random = randomSource(order.length);
    const vocab = vocabulary(random, 2000);
    const index = createTermIndex();
    const model = new Model();
    const range = (first, count) => Array.from({ length: count }, (_, i) => first + i);
    addBatch(index, model, makeBatch(random, range(1, 5000), vocab, order)); // ~20,000 postings: laid out at once
    assertQueries(index, model, random, vocab, 5);
    addBatch(index, model, makeBatch(random, range(5001, 300), vocab)); // into the delta
    index.remove(Int32Array.from(range(100, 50)));
    model.remove(range(100, 50));
    assertQueries(index, model, random, vocab, 5);
    // A second bulk with the delta not empty, docs live or removed already among its own.
    const again = makeBatch(random, [...range(120, 60), ...range(6000, 5000)], vocab, order);
    addBatch(index, model, again);
    assert.equal(index.size, model.lengths.size);
    assertQueries(index, model, random, vocab, 8, [1, 10, 3000]);
  }
});

test("docs added out of order, and batches in term order but not doc order", () => {
  const random = randomSource(6);
  const vocab = vocabulary(random, 1500);
  const index = createTermIndex();
  const model = new Model();
  const range = (first, count) => Array.from({ length: count }, (_, i) => first + i);
  addBatch(index, model, makeBatch(random, range(20_001, 5000), vocab, "sorted")); // the base
  // Earlier docs, a few at a time and in falling order: merged among the base's, doc by doc.
  for (let first = 8000; first > 0; first -= 10) addBatch(index, model, makeBatch(random, range(first, 10), vocab));
  assertQueries(index, model, random, vocab, 5);
  index.remove(Int32Array.from(range(10, 3000)));
  model.remove(range(10, 3000));
  // Big batches sorted by term, but with docs falling within a term, or with the low words
  // compared as signed: neither is (term, doc) order, so both go through the delta.
  const termOrder = (a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0);
  const signedLowOrder = (a, b) => {
    const high = (t) => BigInt.asIntN(32, t >> 32n);
    const low = (t) => BigInt.asIntN(32, t);
    return high(a[1]) < high(b[1]) ? -1 : high(a[1]) > high(b[1]) ? 1 : low(a[1]) < low(b[1]) ? -1 : 1;
  };
  for (const [first, order] of [[30_000, (a, b) => termOrder(a, b) || b[0] - a[0]], [40_000, signedLowOrder]]) {
    const { docs, lengths, postingDocs, terms, tfs } = makeBatch(random, range(first, 5000), vocab);
    const postings = [...postingDocs].map((doc, p) => [doc, terms[p], tfs[p]]).sort(order);
    addBatch(index, model, batchOf(docs, lengths, postings));
    assertQueries(index, model, random, vocab, 5);
  }
});

test("removes, of known and unknown docs, are for good; adding a live doc again is ignored", () => {
  const random = randomSource(3);
  const vocab = vocabulary(random, 300);
  const index = createTermIndex();
  const model = new Model();
  addBatch(index, model, makeBatch(random, Array.from({ length: 400 }, (_, i) => 2 * i + 1), vocab));
  const doomed = [1, 3, 5, 2, 4, 801, 5_000_000, 0, -7]; // 2, 4, 801 and 5,000,000 never added; 0 and -7 cannot be
  index.remove(Int32Array.from(doomed));
  model.remove(doomed);
  assert.equal(index.size, 397);
  // Removed docs, then live ones with other postings: all ignored, with their postings.
  addBatch(index, model, makeBatch(random, [1, 2, 4, 801, 5_000_000], vocab));
  addBatch(index, model, makeBatch(random, [7, 9, 11], vocab));
  assert.equal(index.size, 397);
  assertQueries(index, model, random, vocab, 20, [5, 50]);
  // Enough removed for the dead postings to be dropped by a merge.
  const most = [...model.lengths.keys()].filter(() => random() < 0.9);
  index.remove(Int32Array.from(most));
  model.remove(most);
  assert.equal(index.size, model.lengths.size);
  assertQueries(index, model, random, vocab, 20);
  index.remove(Int32Array.from(model.lengths.keys()));
  model.remove([...model.lengths.keys()]);
  assert.equal(index.size, 0);
  assertQueries(index, model, random, vocab, 3);
});

test("docs of length 0 count in size but in no statistic", () => {
  const index = createTermIndex();
  const model = new Model();
  const batch = batchOf([1, 2, 3, 4], [0, 0, 3, 1], [[3, 10n, 2], [3, 11n, 1], [4, 10n, 1]]);
  addBatch(index, model, batch);
  assert.equal(index.size, 4);
  const query = [BigInt64Array.of(10n, 11n), Int32Array.of(1, 1)];
  assertMatches(index, model, ...query, 10);
  assertMatches(index, model, ...query, 10, Int32Array.of(1, 2, 3), true);
  assertMatches(index, model, ...query, 10, Int32Array.of(1, 2), true); // N = 0 there
  index.remove(Int32Array.of(1));
  assert.equal(index.size, 3);
  assertMatches(index, model, ...query, 10);
});

test("a doc listed twice in one add counts once, with its first length", () => {
  const index = createTermIndex();
  const model = new Model();
  addBatch(index, model, batchOf([5, 6, 5], [2, 1, 9], [[5, 1n, 2], [6, 1n, 1]]));
  assert.equal(index.size, 2);
  assertMatches(index, model, BigInt64Array.of(1n), Int32Array.of(1), 10);
});

test("clear empties the index, tombstones too, and it fills again", () => {
  const random = randomSource(4);
  const vocab = vocabulary(random, 200);
  const index = createTermIndex();
  addBatch(index, new Model(), makeBatch(random, Array.from({ length: 300 }, (_, i) => i + 1), vocab));
  index.remove(Int32Array.of(1, 2, 3, 1000));
  index.clear();
  assert.equal(index.size, 0);
  const model = new Model();
  assertQueries(index, model, random, vocab, 3);
  addBatch(index, model, makeBatch(random, [1, 2, 1000, 7], vocab)); // removed before the clear: live again
  assert.equal(index.size, 4);
  assertQueries(index, model, random, vocab, 10);
});

test("query terms absent, k beyond the matches, k 0", () => {
  const random = randomSource(5);
  const vocab = vocabulary(random, 100);
  const index = createTermIndex();
  const model = new Model();
  addBatch(index, model, makeBatch(random, Array.from({ length: 50 }, (_, i) => i + 1), vocab));
  const absent = BigInt64Array.of(term(0x1234_5678, 1), term(0x1234_5678, 2));
  assert.equal(index.topK(absent, Int32Array.of(1, 1), 10).docs.length, 0);
  const { terms, qtfs } = randomQuery(random, vocab);
  const all = assertMatches(index, model, terms, qtfs, 1000);
  assert.ok(all.docs.length > 0 && all.docs.length < 50);
  assert.equal(index.topK(terms, qtfs, 0).docs.length, 0);
  assert.equal(index.topK(terms, qtfs, 0, Int32Array.of(1, 2), true).docs.length, 0);
  assert.equal(index.topK(terms, qtfs, 10, new Int32Array(0)).docs.length, 0);
});

test("equal scores are ordered by smaller doc, in the base and in the delta", () => {
  const index = createTermIndex();
  const model = new Model();
  const same = (docs) => batchOf(docs, docs.map(() => 3), docs.flatMap((doc) => [[doc, 42n, 2], [doc, 7n, 1]]));
  addBatch(index, model, same([90, 12, 55, 31]));
  addBatch(index, model, batchOf([8], [3], [[8, 42n, 3]])); // above them
  addBatch(index, model, batchOf([3], [6], [[3, 42n, 1], [3, 9n, 5]])); // below them
  const query = [BigInt64Array.of(42n), Int32Array.of(1)];
  const found = assertMatches(index, model, ...query, 10);
  assert.deepEqual([...found.docs], [8, 12, 31, 55, 90, 3]);
  assert.equal(new Set(found.scores.subarray(1, 5)).size, 1);
  assert.deepEqual([...index.topK(...query, 3).docs], [8, 12, 31]);
  assert.deepEqual([...index.topK(...query, 2, Int32Array.of(90, 55, 90)).docs], [55, 90]);
  // The same once merged into the base: enough filler postings to pass the threshold.
  const filler = Array.from({ length: MERGE_POSTINGS }, (_, i) => 1000 + i);
  addBatch(index, model, batchOf(filler, filler.map(() => 1), filler.map((doc) => [doc, 5n, 1])));
  addBatch(index, model, same([70, 20]));
  assert.deepEqual([...assertMatches(index, model, ...query, 10).docs], [8, 12, 20, 31, 55, 70, 90, 3]);
});

test("terms differing only in their high or only in their low 32 bits, and negative ones, are told apart", () => {
  const halves = [0, 1, -1, 0x7fff_ffff, -0x8000_0000, 0x1234_5678];
  const terms = halves.flatMap((hi) => halves.map((lo) => term(hi, lo)));
  const byTermThenDoc = (a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : a[0] - b[0]);
  // Doc d + 1 holds terms d and d + 1 (so each term two docs, but for the last doc's wrap).
  const docPostings = (d) => [[d + 1, terms[d], 1], [d + 1, terms[(d + 1) % terms.length], 2]];
  // Filler docs from `first` on, enough postings for the bulk path (or to force a merge).
  const filler = (first) => Array.from({ length: MERGE_POSTINGS }, (_, i) => [first + i, 99n, 1]);
  const addSorted = (index, model, postings) => {
    postings.sort(byTermThenDoc);
    const docs = [...new Set(postings.map(([doc]) => doc))];
    addBatch(index, model, batchOf(docs, docs.map((doc) => (doc < 100 ? 3 : 1)), postings));
  };
  const addOneByOne = (index, model, ds) => {
    for (const d of ds) addBatch(index, model, batchOf([d + 1], [3], docPostings(d)));
  };
  const ds = terms.map((_, d) => d);
  const ways = {
    "in the delta": (index, model) => addOneByOne(index, model, ds),
    "in one sorted bulk": (index, model) => addSorted(index, model, [...ds.flatMap(docPostings), ...filler(100)]),
    // A base and a delta with terms of their own, then merged: (docs d with d % 4 = 1 or 3
    // are never added).
    "merged": (index, model) => {
      addSorted(index, model, [...ds.filter((d) => d % 4 === 0).flatMap(docPostings), ...filler(100)]);
      addOneByOne(index, model, ds.filter((d) => d % 4 === 2));
      addSorted(index, model, filler(100_000));
    },
  };
  for (const [way, fill] of Object.entries(ways)) {
    const index = createTermIndex();
    const model = new Model();
    fill(index, model);
    terms.forEach((t, d) => {
      const found = assertMatches(index, model, BigInt64Array.of(t), Int32Array.of(1), 10);
      const holders = way === "merged" ? found.docs.length : [...found.docs].sort((a, b) => a - b);
      assert.deepEqual(holders, way === "merged" ? 1 : d === 0 ? [1, terms.length] : [d, d + 1], way);
    });
    assertMatches(index, model, BigInt64Array.from(terms.slice(0, 32)), new Int32Array(32).fill(1), 50);
  }
});

test("pruning keeps every doc that can still make the top k, even within a hair of the bounds", () => {
  // tfs in the thousands, with lengths near the average, put every part within 0.1% of its
  // term's bound (qtf × idf × (K1 + 1)), so that pruning decides right at the edge.
  const random = randomSource(9);
  const vocab = vocabulary(random, 12);
  const index = createTermIndex();
  const model = new Model();
  const postings = [];
  const lengths = [];
  const docs = Array.from({ length: 600 }, (_, i) => i + 1);
  for (const doc of docs) {
    const terms = new Set(Array.from({ length: 1 + Math.floor(random() * 4) }, () => pickTerm(random, vocab)));
    let length = 0;
    for (const t of terms) {
      const tf = 1000 + Math.floor(random() * 2000);
      postings.push([doc, t, tf]);
      length += tf;
    }
    lengths.push(length);
  }
  const filler = Array.from({ length: MERGE_POSTINGS }, (_, i) => [1000 + i, 99n, 5000]); // for a base
  const all = [...postings, ...filler].sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : a[0] - b[0]));
  const fillerDocs = filler.map(([doc]) => doc);
  addBatch(index, model, batchOf([...docs, ...fillerDocs], [...lengths, ...fillerDocs.map(() => 5000)], all));
  for (let q = 0; q < 150; q++) {
    const terms = new Set(Array.from({ length: 1 + Math.floor(random() * 4) }, () => pickTerm(random, vocab)));
    const qtfs = Int32Array.from(terms, () => 1 + Math.floor(random() * 2));
    for (const k of [1, 2, 3, 5, 10]) assertMatches(index, model, BigInt64Array.from(terms), qtfs, k);
  }
});

test("matched masks use all 32 bits", () => {
  const index = createTermIndex();
  const model = new Model();
  const terms = Array.from({ length: 32 }, (_, j) => term(-j, j * 7919));
  const postings = [
    ...terms.map((t) => [1, t, 1]),
    [2, terms[31], 1],
    [3, terms[0], 1],
    [3, terms[31], 2],
  ];
  addBatch(index, model, batchOf([1, 2, 3], [32, 1, 3], postings));
  const found = assertMatches(index, model, BigInt64Array.from(terms), new Int32Array(32).fill(1), 10);
  const masks = new Map([...found.docs].map((doc, i) => [doc, found.matched[i]]));
  assert.deepEqual(Object.fromEntries(masks), { 1: 0xffff_ffff, 2: 0x8000_0000, 3: 0x8000_0001 });
});

test("tfs beyond 16 bits are kept whole", () => {
  const random = randomSource(8);
  const vocab = vocabulary(random, 100);
  const index = createTermIndex();
  const model = new Model();
  addBatch(index, model, makeBatch(random, Array.from({ length: 200 }, (_, i) => i + 1), vocab));
  const big = [[500, vocab[0], 70_000], [500, vocab[1], 1], [501, vocab[0], 65_537]];
  addBatch(index, model, batchOf([500, 501], [70_001, 65_537], big));
  addBatch(index, model, makeBatch(random, Array.from({ length: 200 }, (_, i) => i + 1000), vocab));
  assertMatches(index, model, BigInt64Array.of(vocab[0], vocab[1]), Int32Array.of(1, 1), 20);
  assertQueries(index, model, random, vocab, 10);
});

test("postings() gives every live posting in (term, doc) order, and an index loaded from them ranks the same", () => {
  const random = randomSource(12);
  const vocab = vocabulary(random, 800);
  const index = createTermIndex();
  const model = new Model();
  let next = 1;
  // Past one merge, so the postings sit in the base and in the delta, and removed docs in both.
  while (next < 4000) {
    const docs = Array.from({ length: 1 + Math.floor(random() * 30) }, () => next++);
    addBatch(index, model, makeBatch(random, docs, vocab));
    if (random() < 0.1) {
      const doomed = [...model.lengths.keys()].filter(() => random() < 0.02);
      index.remove(Int32Array.from(doomed));
      model.remove(doomed);
    }
  }
  const saved = index.postings();
  const expected = [...model.postings].flatMap(([doc, terms]) => [...terms].map(([t, tf]) => [t, doc, tf]));
  expected.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]));
  assert.deepEqual(
    Array.from(saved.docs, (doc, p) => [saved.terms[p], doc, saved.tfs[p]]),
    expected,
  );
  assert.ok(saved.terms instanceof BigInt64Array && saved.docs instanceof Int32Array && saved.tfs instanceof Int32Array);
  const reloaded = createTermIndex();
  const live = [...model.lengths];
  reloaded.add(Int32Array.from(live, ([doc]) => doc), Int32Array.from(live, ([, n]) => n), saved.docs, saved.terms, saved.tfs);
  assert.equal(reloaded.size, model.lengths.size);
  assertQueries(reloaded, model, random, vocab, 20, [1, 10, 100]);
  assertQueries(index, model, random, vocab, 5); // the index itself is unchanged by it
});
