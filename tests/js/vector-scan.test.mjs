// web/worker/vector-scan.mjs against naive computations on random data, for both kernels.
// Run: node --test tests/js/
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { createVectorScan } from "../../web/worker/vector-scan.mjs";
import { randomSource } from "./random-source.mjs";

const DIMS = 384;
const KERNELS = [
  ["SIMD", {}],
  ["JS fallback", { simd: false }],
];

function unitVector(random, dims) {
  const gaussian = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const vector = Float32Array.from({ length: dims }, gaussian);
  const norm = Math.hypot(...vector);
  return vector.map((x) => x / norm);
}

/** The query's code range: as fine as an i32 dot of dims int8 codes can hold. */
const queryCodeSteps = (dims) => Math.min(32767, Math.floor(0x7fffffff / (dims * 127)));

/** Vectors quantised as the Python side does: codes scaled so the largest is ±127. */
function quantisedVectors(random, docs, dims) {
  const codes = new Int8Array(docs.length * dims);
  const scales = new Float32Array(docs.length);
  docs.forEach((_, i) => {
    const vector = unitVector(random, dims);
    const peak = vector.reduce((max, x) => Math.max(max, Math.abs(x)), 0);
    scales[i] = peak / 127;
    vector.forEach((x, d) => (codes[i * dims + d] = Math.round(x / scales[i])));
  });
  return { docs: Int32Array.from(docs), codes, scales };
}

/** What the scan should hold: doc -> { codes, scale }, updated alongside it. */
class Model {
  vectors = new Map();
  constructor(dims) {
    this.dims = dims;
  }
  add({ docs, codes, scales }) {
    docs.forEach((doc, i) => {
      this.vectors.set(doc, { codes: codes.slice(i * this.dims, (i + 1) * this.dims), scale: scales[i] });
    });
  }
  remove(docs) {
    for (const doc of docs) this.vectors.delete(doc);
  }

  /** The module's arithmetic, written out naively: every candidate scored, then sorted. */
  expectedTopK(query, k, allow = null) {
    const peak = query.reduce((max, x) => Math.max(max, Math.abs(x)), 0);
    const steps = queryCodeSteps(query.length);
    const queryCodes = query.map((x) => Math.round(x * (steps / peak)));
    const queryScale = peak / steps;
    const held = [...this.vectors.keys()];
    const candidates = allow === null ? held : [...new Set(allow)].filter((doc) => this.vectors.has(doc));
    const scored = candidates.map((doc) => {
      const { codes, scale } = this.vectors.get(doc);
      const dot = codes.reduce((sum, code, d) => sum + code * queryCodes[d], 0);
      return { doc, score: Math.fround(dot * scale * queryScale) };
    });
    scored.sort((a, b) => b.score - a.score || a.doc - b.doc);
    return scored.slice(0, k);
  }

  /** scale × Σ codes·q in float64, and how far quantising q can move it: each query code
   * is off by at most half a step (queryScale / 2), so by scale × Σ|codes| × queryScale / 2. */
  exactScore(doc, query) {
    const { codes, scale } = this.vectors.get(doc);
    const peak = query.reduce((max, x) => Math.max(max, Math.abs(x)), 0);
    const queryScale = peak / queryCodeSteps(query.length);
    let exact = 0;
    let absCodes = 0;
    codes.forEach((code, d) => {
      exact += code * query[d];
      absCodes += Math.abs(code);
    });
    return { exact: exact * scale, bound: (scale * absCodes * queryScale) / 2 + 1e-6 };
  }
}

function assertMatches(scan, model, query, k, allow = null) {
  const found = scan.topK(query, k, allow);
  const expected = model.expectedTopK(query, k, allow);
  assert.deepEqual([...found.docs], expected.map(({ doc }) => doc));
  assert.deepEqual([...found.scores], expected.map(({ score }) => score));
  found.docs.forEach((doc, i) => {
    const { exact, bound } = model.exactScore(doc, query);
    assert.ok(Math.abs(found.scores[i] - exact) <= bound, `doc ${doc}: ${found.scores[i]} vs exact ${exact}`);
  });
}

async function filledScan(options, random, count, dims = DIMS) {
  const scan = await createVectorScan(dims, options);
  const model = new Model(dims);
  const batch = quantisedVectors(random, Array.from({ length: count }, (_, i) => 1 + 3 * i), dims);
  scan.add(batch.docs, batch.codes, batch.scales);
  model.add(batch);
  return { scan, model };
}

test("SIMD is used where the engine has it, and the JS fallback when asked", async () => {
  assert.equal((await createVectorScan(DIMS)).simd, true);
  assert.equal((await createVectorScan(DIMS, { simd: false })).simd, false);
});

test("bad dims, lengths and docs are refused", async () => {
  for (const dims of [0, -16, 16.5]) await assert.rejects(createVectorScan(dims), RangeError);
  const scan = await createVectorScan(16);
  assert.throws(() => scan.add(new Int32Array([1]), new Int8Array(15), new Float32Array(1)), RangeError);
  assert.throws(() => scan.add(new Int32Array([1]), new Int8Array(16), new Float32Array(2)), RangeError);
  assert.throws(() => scan.add(new Int32Array([-1]), new Int8Array(16), new Float32Array(1)), RangeError);
  assert.throws(() => scan.topK(new Float32Array(32), 1), RangeError);
  assert.equal(scan.size, 0);
});

test("dims that are not a multiple of 16 are padded with zeros, and score the same", async () => {
  for (const [, options] of KERNELS) {
    for (const dims of [1, 26, 100]) {
      const random = randomSource(dims);
      const { scan, model } = await filledScan(options, random, 40, dims);
      assert.equal(scan.size, 40);
      for (let q = 0; q < 5; q++) assertMatches(scan, model, unitVector(random, dims), 10);
      assert.throws(() => scan.add(new Int32Array([1]), new Int8Array(dims + 1), new Float32Array(1)), RangeError);
      assert.throws(() => scan.topK(new Float32Array(dims + 1), 1), RangeError);
    }
  }
});

for (const [kernel, options] of KERNELS) {
  describe(`${kernel} kernel`, () => {
    for (const size of [0, 1, 17, 1000]) {
      test(`matches a naive computation: ${size} vectors, k 1/10/50, with and without allow`, async () => {
        const random = randomSource(size + 1);
        const { scan, model } = await filledScan(options, random, size);
        assert.equal(scan.size, size);
        const held = [...model.vectors.keys()];
        const pick = (share) => held.filter(() => random() < share);
        const few = pick(0.1);
        const allowLists = [
          null,
          [], // nothing allowed
          [...few, ...few, 2, -5, 1e6], // few rows, scored one by one; repeats count once, unknown docs not at all
          [...pick(0.8), ...pick(0.8)], // most rows, found by a full scan
        ];
        for (let q = 0; q < 3; q++) {
          const query = unitVector(random, DIMS);
          for (const k of [1, 10, 50]) {
            for (const allow of allowLists) assertMatches(scan, model, query, k, allow && Int32Array.from(allow));
          }
        }
      });
    }

    test("ties go to the smaller doc", async () => {
      const scan = await createVectorScan(16, options);
      const codes = new Int8Array(16 * 4).fill(5);
      scan.add(new Int32Array([9, 3, 7, 5]), codes, new Float32Array(4).fill(0.5));
      scan.add(new Int32Array([4]), new Int8Array(16).fill(6), new Float32Array([0.5]));
      const query = new Float32Array(16).fill(0.25);
      const { docs, scores } = scan.topK(query, 10);
      assert.deepEqual([...docs], [4, 3, 5, 7, 9]);
      assert.ok(scores[0] > scores[1]);
      assert.deepEqual(new Set(scores.subarray(1)).size, 1);
      assert.deepEqual([...scan.topK(query, 3).docs], [4, 3, 5]);
      assert.deepEqual([...scan.topK(query, 2, new Int32Array([9, 7])).docs], [7, 9]);
    });

    test("ties are judged on the float32 scores returned", async () => {
      // Scored in float64 these differ (doc 2 ahead, by less than a float32 step); as returned they tie.
      const scan = await createVectorScan(16, options);
      const codes = new Int8Array(32);
      codes[0] = 1;
      codes[16] = 3;
      scan.add(new Int32Array([1, 2]), codes, new Float32Array([0.00337491137906909, 0.001124970498494804]));
      const query = new Float32Array(16);
      query[0] = 1;
      const { docs, scores } = scan.topK(query, 2);
      assert.equal(scores[0], scores[1]);
      assert.deepEqual([...docs], [1, 2]);
    });

    test("an odd number of rows right after an even number (SIMD scores rows in pairs)", async () => {
      const scan = await createVectorScan(16, options);
      const docs = Int32Array.from({ length: 10 }, (_, i) => i);
      scan.add(docs, new Int8Array(160).fill(100), new Float32Array(10).fill(1));
      const query = new Float32Array(16).fill(0.25);
      assert.deepEqual([...scan.topK(query, 5, new Int32Array([3, 6])).docs], [3, 6]);
      assert.deepEqual([...scan.topK(query, 5, new Int32Array([8, 1, 4])).docs], [1, 4, 8]);
    });

    test("k beyond the candidates returns them all; k 0 returns nothing", async () => {
      const { scan, model } = await filledScan(options, randomSource(5), 7);
      const query = unitVector(randomSource(6), DIMS);
      assert.equal(scan.topK(query, 50).docs.length, 7);
      assertMatches(scan, model, query, 50);
      assert.equal(scan.topK(query, 50, new Int32Array([1, 4])).docs.length, 2);
      assert.equal(scan.topK(query, 0).docs.length, 0);
    });

    test("add replaces a doc already held, also when repeated within one call", async () => {
      const random = randomSource(11);
      const { scan, model } = await filledScan(options, random, 40);
      const again = quantisedVectors(random, [1, 4, 4, 500], DIMS); // 4 twice: the later wins
      scan.add(again.docs, again.codes, again.scales);
      model.add(again);
      assert.equal(scan.size, 41);
      for (let q = 0; q < 5; q++) assertMatches(scan, model, unitVector(random, DIMS), 41);
    });

    test("remove drops docs, ignores unknown ones, and the rest stay searchable", async () => {
      const random = randomSource(12);
      const { scan, model } = await filledScan(options, random, 300);
      for (let round = 0; round < 6; round++) {
        const doomed = [...model.vectors.keys()].filter(() => random() < 0.2);
        doomed.push(2, -1, 99_999); // never held
        scan.remove(round % 2 ? Int32Array.from(doomed) : doomed);
        model.remove(doomed);
        const fresh = quantisedVectors(random, [10_000 + round * 3, 10_001 + round * 3], DIMS);
        scan.add(fresh.docs, fresh.codes, fresh.scales);
        model.add(fresh);
        assert.equal(scan.size, model.vectors.size);
        const query = unitVector(random, DIMS);
        assertMatches(scan, model, query, 50);
        const allow = [...model.vectors.keys(), ...doomed].filter(() => random() < 0.3);
        assertMatches(scan, model, query, 10, Int32Array.from(allow));
      }
      scan.remove([...model.vectors.keys()]);
      assert.equal(scan.size, 0);
      assert.equal(scan.topK(unitVector(random, DIMS), 10).docs.length, 0);
    });

    test("relabel renumbers docs in one step, also where old and new numbers overlap", async () => {
      const random = randomSource(14);
      const scan = await createVectorScan(DIMS, options);
      const batch = quantisedVectors(random, Array.from({ length: 200 }, (_, i) => i), DIMS);
      scan.add(batch.docs, batch.codes, batch.scales);
      const gone = batch.docs.filter((doc) => doc % 7 === 3);
      scan.remove(gone);
      // Provisional rows 0..199 become docs in a range that overlaps them (as the mirror's
      // docs do), in an order of their own; a removed row's new number is simply unused.
      const kept = [...batch.docs];
      const to = Int32Array.from(kept, (doc) => 150 + ((doc * 37) % 200));
      scan.relabel(batch.docs, to);
      const model = new Model(DIMS);
      const moved = { docs: [], codes: [], scales: [] };
      kept.forEach((doc, i) => {
        if (doc % 7 === 3) return;
        moved.docs.push(to[i]);
        moved.codes.push(...batch.codes.subarray(i * DIMS, (i + 1) * DIMS));
        moved.scales.push(batch.scales[i]);
      });
      model.add({ docs: moved.docs, codes: Int8Array.from(moved.codes), scales: Float32Array.from(moved.scales) });
      assert.equal(scan.size, model.vectors.size);
      for (let q = 0; q < 3; q++) {
        const query = unitVector(random, DIMS);
        assertMatches(scan, model, query, 20);
        assertMatches(scan, model, query, 10, Int32Array.from(moved.docs.filter(() => random() < 0.2)));
      }
      scan.remove(Int32Array.from(moved.docs.slice(0, 5))); // the new numbers are the ones held
      model.remove(moved.docs.slice(0, 5));
      assertMatches(scan, model, unitVector(random, DIMS), 30);
      // A relabel that would hold one doc twice changes nothing.
      const [first, second] = [...model.vectors.keys()];
      assert.throws(() => scan.relabel(Int32Array.of(first), Int32Array.of(second)), RangeError);
      assert.throws(() => scan.relabel(Int32Array.of(first), Int32Array.of(-2)), RangeError);
      assert.throws(() => scan.relabel(Int32Array.of(first), Int32Array.of()), RangeError);
      assertMatches(scan, model, unitVector(random, DIMS), 30);
    });

    test("clear empties the store, which then fills again", async () => {
      const random = randomSource(13);
      const { scan } = await filledScan(options, random, 50);
      scan.clear();
      assert.equal(scan.size, 0);
      assert.equal(scan.topK(unitVector(random, DIMS), 5).docs.length, 0);
      const model = new Model(DIMS);
      const batch = quantisedVectors(random, [7, 3], DIMS);
      scan.add(batch.docs, batch.codes, batch.scales);
      model.add(batch);
      assertMatches(scan, model, unitVector(random, DIMS), 5);
    });

    test("storage grows over many small adds, for other dims too", async () => {
      for (const dims of [16, 48, 384]) {
        const random = randomSource(dims);
        const scan = await createVectorScan(dims, options);
        const model = new Model(dims);
        for (let first = 0; first < 1500; first += 7) {
          const batch = quantisedVectors(random, Array.from({ length: 7 }, (_, i) => first + i), dims);
          scan.add(batch.docs, batch.codes, batch.scales);
          model.add(batch);
        }
        for (let q = 0; q < 3; q++) assertMatches(scan, model, unitVector(random, dims), 10);
      }
    });
  });
}

test("SIMD and JS fallback agree exactly on every result", async () => {
  const random = randomSource(21);
  const [simd, fallback] = await Promise.all(KERNELS.map(([, options]) => createVectorScan(DIMS, options)));
  const batch = quantisedVectors(random, Array.from({ length: 2000 }, (_, i) => i), DIMS);
  for (const scan of [simd, fallback]) {
    scan.add(batch.docs, batch.codes, batch.scales);
    scan.remove(Array.from({ length: 300 }, (_, i) => 5 * i));
  }
  const allow = Int32Array.from({ length: 400 }, () => Math.floor(random() * 2000));
  for (let q = 0; q < 20; q++) {
    const query = unitVector(random, DIMS);
    assert.deepEqual(simd.topK(query, 50), fallback.topK(query, 50));
    assert.deepEqual(simd.topK(query, 10, allow), fallback.topK(query, 10, allow));
  }
});

test("quantising the query moves scores by under 1e-4", async () => {
  const random = randomSource(31);
  const { scan, model } = await filledScan({}, random, 1000);
  let maxError = 0;
  for (let q = 0; q < 20; q++) {
    const query = unitVector(random, DIMS);
    const { docs, scores } = scan.topK(query, 1000);
    docs.forEach((doc, i) => (maxError = Math.max(maxError, Math.abs(scores[i] - model.exactScore(doc, query).exact))));
  }
  assert.ok(maxError < 1e-4, `max error ${maxError}`);
});
