// Times web/worker/term-index.mjs over 100,000 messages of Zipf-distributed terms: building
// it (one sorted bulk add, as from a snapshot, and 100,000 single-message adds), its memory,
// top-10 BM25 queries (unfiltered, and with an allow list of 33,000 docs, scoped statistics
// or not), and one more message added to the full index.
// Run: node bench/js/term-index-bench.mjs  (Node's V8 is close to Chromium's: indicative)
import assert from "node:assert/strict";
import os from "node:os";
import v8 from "node:v8";
import vm from "node:vm";

import { createTermIndex } from "../../web/worker/term-index.mjs";
import { randomSource } from "../../tests/js/random-source.mjs";

const DOCS = 100_000;
const VOCABULARY = 50_000;
const ZIPF_EXPONENT = 1; // word frequencies in text: the r-th commonest word about 1/r as frequent
const K = 10;
const WARMUP_QUERIES = 20;
const TIMED_QUERIES = 200;
const ALLOWED_DOCS = 33_000;
const TIMED_ADDS = 1_000;

v8.setFlagsFromString("--expose-gc");
const collectGarbage = vm.runInNewContext("gc");

const random = randomSource(11);

// The vocabulary: a random 64-bit hash per rank, and Zipf's cumulative distribution over ranks.
const hashes = new BigInt64Array(VOCABULARY);
const hashWords = new Int32Array(hashes.buffer);
for (let i = 0; i < hashWords.length; i++) hashWords[i] = Math.floor(random() * 2 ** 32) | 0;
const cumulative = new Float64Array(VOCABULARY);
let total = 0;
for (let rank = 0; rank < VOCABULARY; rank++) cumulative[rank] = total += 1 / (rank + 1) ** ZIPF_EXPONENT;

/** A rank drawn from Zipf's distribution: the first with a cumulative share above a uniform draw. */
function zipfRank() {
  const target = random() * total;
  let low = 0;
  let high = VOCABULARY - 1;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (cumulative[middle] < target) low = middle + 1;
    else high = middle;
  }
  return low;
}

// Messages as words drawn from Zipf's law until 5-25 distinct terms (15 on average): common
// terms come back, so tfs are mostly 1-3. Postings in doc order, each doc's at [offsets[i], offsets[i + 1]).
const docs = Int32Array.from({ length: DOCS }, (_, i) => i + 1);
const lengths = new Int32Array(DOCS);
const offsets = new Int32Array(DOCS + 1);
let postingRanks = [];
let postingTfs = [];
for (let i = 0; i < DOCS; i++) {
  const distinct = 5 + Math.floor(random() * 21);
  const counts = new Map();
  let length = 0;
  while (counts.size < distinct) {
    const rank = zipfRank();
    counts.set(rank, (counts.get(rank) ?? 0) + 1);
    length++;
  }
  lengths[i] = length;
  for (const [rank, tf] of counts) {
    postingRanks.push(rank);
    postingTfs.push(tf);
  }
  offsets[i + 1] = postingRanks.length;
}
const postingCount = postingRanks.length;
const docMajor = {
  docs: new Int32Array(postingCount),
  terms: new BigInt64Array(postingCount),
  tfs: Int32Array.from(postingTfs),
};
for (let i = 0; i < DOCS; i++) docMajor.docs.fill(docs[i], offsets[i], offsets[i + 1]);
postingRanks.forEach((rank, p) => (docMajor.terms[p] = hashes[rank]));

// The same postings sorted by (term, doc), as a snapshot holds them: a counting sort by each
// term's place among the sorted hashes (docs stay ascending within a term).
const sortedHashes = hashes.slice().sort();
const placeOfRank = new Int32Array(VOCABULARY);
const rankOfHash = new Map(Array.from(hashes, (hash, rank) => [hash, rank]));
sortedHashes.forEach((hash, place) => (placeOfRank[rankOfHash.get(hash)] = place));
const placeStarts = new Int32Array(VOCABULARY + 1);
for (const rank of postingRanks) placeStarts[placeOfRank[rank] + 1]++;
for (let place = 0; place < VOCABULARY; place++) placeStarts[place + 1] += placeStarts[place];
const termMajor = {
  docs: new Int32Array(postingCount),
  terms: new BigInt64Array(postingCount),
  tfs: new Int32Array(postingCount),
};
const nextAt = placeStarts.slice(0, VOCABULARY);
for (let p = 0; p < postingCount; p++) {
  const at = nextAt[placeOfRank[postingRanks[p]]]++;
  termMajor.docs[at] = docMajor.docs[p];
  termMajor.terms[at] = docMajor.terms[p];
  termMajor.tfs[at] = docMajor.tfs[p];
}
postingRanks = postingTfs = null;

/** Bytes held by the JS heap and by array buffers (where typed arrays keep their contents). */
function memoryNow() {
  collectGarbage();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return { heapUsed, arrayBuffers };
}

function percentiles(millis) {
  millis.sort((a, b) => a - b);
  const at = (share) => millis[Math.min(millis.length - 1, Math.ceil(share * millis.length) - 1)];
  return { median: at(0.5), p95: at(0.95), max: millis[millis.length - 1] };
}

const before = memoryNow();
let started = performance.now();
const bulkIndex = createTermIndex();
bulkIndex.add(docs, lengths, termMajor.docs, termMajor.terms, termMajor.tfs);
const bulkMillis = performance.now() - started;
const built = memoryNow();
bulkIndex.topK(hashes.subarray(0, 1), Int32Array.of(1), K); // allocates the query scratch (per doc)
const queried = memoryNow();

started = performance.now();
const singleIndex = createTermIndex();
let slowestAdd = 0;
for (let i = 0; i < DOCS; i++) {
  const from = offsets[i];
  const to = offsets[i + 1];
  const addStarted = performance.now();
  singleIndex.add(
    docs.subarray(i, i + 1),
    lengths.subarray(i, i + 1),
    docMajor.docs.subarray(from, to),
    docMajor.terms.subarray(from, to),
    docMajor.tfs.subarray(from, to),
  );
  slowestAdd = Math.max(slowestAdd, performance.now() - addStarted);
}
const singleMillis = performance.now() - started;

// Queries of 1-5 distinct terms, each drawn either as words are (common ones mostly) or
// uniformly from the vocabulary (rare ones mostly).
const queries = Array.from({ length: WARMUP_QUERIES + TIMED_QUERIES }, () => {
  const ranks = new Set();
  const count = 1 + Math.floor(random() * 5);
  while (ranks.size < count) ranks.add(random() < 0.5 ? zipfRank() : Math.floor(random() * VOCABULARY));
  return { terms: BigInt64Array.from(ranks, (rank) => hashes[rank]), qtfs: new Int32Array(ranks.size).fill(1) };
});
const allowed = new Set();
while (allowed.size < ALLOWED_DOCS) allowed.add(1 + Math.floor(random() * DOCS));
const allow = Int32Array.from(allowed);

// Both ways of building hold the same index.
for (const { terms, qtfs } of queries.slice(0, 20)) {
  assert.deepEqual(singleIndex.topK(terms, qtfs, K), bulkIndex.topK(terms, qtfs, K));
  assert.deepEqual(singleIndex.topK(terms, qtfs, K, allow, true), bulkIndex.topK(terms, qtfs, K, allow, true));
}

function timeQueries(search) {
  const millis = [];
  queries.forEach(({ terms, qtfs }, i) => {
    const start = performance.now();
    search(terms, qtfs);
    if (i >= WARMUP_QUERIES) millis.push(performance.now() - start);
  });
  return percentiles(millis);
}

const results = {
  "unfiltered": timeQueries((terms, qtfs) => bulkIndex.topK(terms, qtfs, K)),
  "allow 33,000, scoped stats": timeQueries((terms, qtfs) => bulkIndex.topK(terms, qtfs, K, allow, true)),
  "allow 33,000, global stats": timeQueries((terms, qtfs) => bulkIndex.topK(terms, qtfs, K, allow, false)),
  "unfiltered (single adds)": timeQueries((terms, qtfs) => singleIndex.topK(terms, qtfs, K)),
};

// One more message at a time into the full index, merges included.
const addMillis = [];
for (let i = 0; i < TIMED_ADDS; i++) {
  const source = i % DOCS;
  const from = offsets[source];
  const to = offsets[source + 1];
  const doc = DOCS + 1 + i;
  const start = performance.now();
  bulkIndex.add(
    Int32Array.of(doc),
    lengths.subarray(source, source + 1),
    new Int32Array(to - from).fill(doc),
    docMajor.terms.subarray(from, to),
    docMajor.tfs.subarray(from, to),
  );
  addMillis.push(performance.now() - start);
}
const adds = percentiles(addMillis);

const mb = (bytes) => `${(bytes / 2 ** 20).toFixed(1)} MB`;
const grownBy = (after) => after.heapUsed - before.heapUsed + after.arrayBuffers - before.arrayBuffers;
const queryTerms = queries.slice(WARMUP_QUERIES).reduce((sum, { terms }) => sum + terms.length, 0) / TIMED_QUERIES;
console.log(
  `${DOCS.toLocaleString("en")} docs, ${postingCount.toLocaleString("en")} postings, ` +
    `vocabulary ${VOCABULARY.toLocaleString("en")} (Zipf, exponent ${ZIPF_EXPONENT})`,
);
console.log(`build, one sorted bulk add      ${bulkMillis.toFixed(1).padStart(8)} ms`);
console.log(
  `build, ${DOCS.toLocaleString("en")} single-doc adds  ${singleMillis.toFixed(1).padStart(8)} ms ` +
    `(the slowest add, a merge: ${slowestAdd.toFixed(1)} ms)`,
);
console.log(
  `memory of the bulk-built index: ${mb(grownBy(built))}, ${mb(grownBy(queried))} with its query scratch ` +
    `(JS heap and array buffers); process heap used ${mb(process.memoryUsage().heapUsed)}`,
);
console.log(`top ${K}, ${TIMED_QUERIES} queries of 1-5 terms (${queryTerms.toFixed(1)} on average), ms:`);
for (const [label, { median, p95, max }] of Object.entries(results)) {
  const column = (value) => value.toFixed(3).padStart(7);
  console.log(`  ${label.padEnd(28)} p50 ${column(median)}   p95 ${column(p95)}   max ${column(max)}`);
}
console.log(
  `one single-doc add at ${DOCS.toLocaleString("en")} docs (${TIMED_ADDS} adds), ms: ` +
    `p50 ${adds.median.toFixed(4)}   p95 ${adds.p95.toFixed(4)}   max ${adds.max.toFixed(2)}`,
);
const load = os.loadavg()[0].toFixed(2);
console.log(`load average (1 min) ${load} on ${os.availableParallelism()} cores: timings are noisier under load`);
