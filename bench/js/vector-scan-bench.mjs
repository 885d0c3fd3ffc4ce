// Times top-10 search over 100,000 × 384 int8-quantised vectors: a plain float32 brute
// force against web/worker/vector-scan.mjs (SIMD kernel, JS fallback, allow lists), and
// measures how far the quantised query moves scores from the exact float ones.
// Run: node bench/js/vector-scan-bench.mjs  (Node's V8 is close to Chromium's: indicative)
import os from "node:os";

import { createVectorScan } from "../../web/worker/vector-scan.mjs";
import { randomSource } from "../../tests/js/random-source.mjs";

const COUNT = 100_000;
const DIMS = 384;
const K = 10;
const WARMUP_QUERIES = 5;
const TIMED_QUERIES = 30;

const random = randomSource(7);
const gaussian = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());

function unitVector() {
  const vector = Float32Array.from({ length: DIMS }, gaussian);
  const norm = Math.hypot(...vector);
  return vector.map((x) => x / norm);
}

// Stored vectors the way the Python side hands them over: int8 codes and a scale each.
const docs = Int32Array.from({ length: COUNT }, (_, i) => i);
const codes = new Int8Array(COUNT * DIMS);
const scales = new Float32Array(COUNT);
const decoded = new Float32Array(COUNT * DIMS);
for (let row = 0; row < COUNT; row++) {
  const vector = unitVector();
  const maxAbs = vector.reduce((max, x) => Math.max(max, Math.abs(x)), 0);
  scales[row] = maxAbs / 127;
  for (let i = 0; i < DIMS; i++) {
    codes[row * DIMS + i] = Math.round(vector[i] / scales[row]);
    decoded[row * DIMS + i] = codes[row * DIMS + i] * scales[row];
  }
}
const queries = Array.from({ length: WARMUP_QUERIES + TIMED_QUERIES }, unitVector);

/** (a): what a page would write without this module. */
function floatTopK(query, k) {
  const bestScores = new Float32Array(k).fill(-Infinity);
  const bestDocs = new Int32Array(k).fill(-1);
  for (let row = 0; row < COUNT; row++) {
    let score = 0;
    const at = row * DIMS;
    for (let i = 0; i < DIMS; i++) score += decoded[at + i] * query[i];
    if (score <= bestScores[k - 1]) continue;
    let slot = k - 1;
    for (; slot > 0 && bestScores[slot - 1] < score; slot--) {
      bestScores[slot] = bestScores[slot - 1];
      bestDocs[slot] = bestDocs[slot - 1];
    }
    bestScores[slot] = score;
    bestDocs[slot] = docs[row];
  }
  return { docs: bestDocs, scores: bestScores };
}

function sampleDocs(count) {
  const picked = new Set();
  while (picked.size < count) picked.add(Math.floor(random() * COUNT));
  return Int32Array.from(picked);
}

function time(search) {
  const millis = [];
  queries.forEach((query, i) => {
    const started = performance.now();
    search(query);
    if (i >= WARMUP_QUERIES) millis.push(performance.now() - started);
  });
  millis.sort((a, b) => a - b);
  const at = (share) => millis[Math.min(millis.length - 1, Math.ceil(share * millis.length) - 1)];
  return { median: at(0.5), p95: at(0.95) };
}

const simdScan = await createVectorScan(DIMS);
const fallbackScan = await createVectorScan(DIMS, { simd: false });
if (!simdScan.simd) throw new Error("this engine has no WebAssembly SIMD: nothing to compare");
for (const scan of [simdScan, fallbackScan]) scan.add(docs, codes, scales);
const allow600 = sampleDocs(600);
const allow20k = sampleDocs(20_000);

const results = {
  "(a) float32 brute force": time((query) => floatTopK(query, K)),
  "(b) SIMD topK": time((query) => simdScan.topK(query, K)),
  "(c) JS fallback topK": time((query) => fallbackScan.topK(query, K)),
  "(d) SIMD, allow 600": time((query) => simdScan.topK(query, K, allow600)),
  "(d) SIMD, allow 20,000": time((query) => simdScan.topK(query, K, allow20k)),
};
console.log(`${COUNT.toLocaleString("en")} × ${DIMS} vectors, top ${K}, ${TIMED_QUERIES} queries (ms)`);
for (const [label, { median, p95 }] of Object.entries(results)) {
  console.log(`${label.padEnd(26)} median ${median.toFixed(2).padStart(7)}   p95 ${p95.toFixed(2).padStart(7)}`);
}
const ratio = (key) => results["(b) SIMD topK"][key] / results["(a) float32 brute force"][key];
console.log(`(b)/(a): ${ratio("median").toFixed(3)} median, ${ratio("p95").toFixed(3)} p95`);

// Quantising the query is the only approximation: compare every score of a 5,000-vector
// store (a full ranking of 100,000 would take minutes) with exact scale × Σ codes·q.
const ERROR_SAMPLE = 5_000;
const sampleScan = await createVectorScan(DIMS);
sampleScan.add(
  docs.subarray(0, ERROR_SAMPLE),
  codes.subarray(0, ERROR_SAMPLE * DIMS),
  scales.subarray(0, ERROR_SAMPLE),
);
let maxError = 0;
let sum = 0;
let sumOfSquares = 0;
for (const query of queries) {
  const { docs: found, scores } = sampleScan.topK(query, ERROR_SAMPLE);
  found.forEach((doc, i) => {
    let exact = 0;
    for (let d = 0; d < DIMS; d++) exact += codes[doc * DIMS + d] * query[d];
    exact *= scales[doc];
    maxError = Math.max(maxError, Math.abs(scores[i] - exact));
    sum += exact;
    sumOfSquares += exact * exact;
  });
}
const samples = queries.length * ERROR_SAMPLE;
const spread = Math.sqrt(sumOfSquares / samples - (sum / samples) ** 2);
let overlap = 0;
for (const query of queries) {
  const exactBest = new Set(floatTopK(query, K).docs);
  overlap += simdScan.topK(query, K).docs.filter((doc) => exactBest.has(doc)).length;
}
console.log(
  `quantisation: max |score - exact| ${maxError.toExponential(2)} over ${samples.toLocaleString("en")} scores, ` +
    `whose standard deviation is ${spread.toFixed(4)} ` +
    `(the error at most ${((100 * maxError) / spread).toFixed(1)}% of it); ` +
    `top-${K} of 100,000 shared with exact float32: ${overlap}/${queries.length * K}`,
);
const load = os.loadavg()[0].toFixed(2);
console.log(`load average (1 min) ${load} on ${os.availableParallelism()} cores: timings are noisier under load`);
