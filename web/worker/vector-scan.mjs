// Top-k inner-product search over int8-quantised vectors.
//
// A stored vector is codes × scale (codes int8); its score for a unit query q is
// scale × Σ codes·q. Each search quantises the query once to i16 (q ≈ q16 × queryScale),
// which turns the scan into exact integer dot products: score ≈ Σ codes·q16 × scale × queryScale.
// Integer dots are what 128-bit WebAssembly SIMD does well (i32x4.dot_i16x8_s: eight
// multiply-adds per instruction), so the codes live in one WebAssembly.Memory and are
// scanned by a module assembled below at run time: the build has no wasm toolchain.
// Engines without SIMD (or without WebAssembly, as in iOS Lockdown mode) get a plain-JS
// kernel with the same integer arithmetic, so both give identical results.

import { TopK } from "./top-k.mjs";

const PAGE_BYTES = 65536;
/** With an allow list naming at least this share of the rows, reading every row in storage
 * order (and skipping the others) beats jumping between the allowed ones: a row read out of
 * order cost about 3× one read in order (measured crossover 0.35-0.4 of the rows). */
const FULL_SCAN_SHARE = 1 / 3;

// ---- A minimal WebAssembly assembler: only what the scanning module needs. ----

const WASM_HEADER = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]; // "\0asm", version 1
const SECTION = { type: 1, import: 2, function: 3, export: 7, code: 10 };
const TYPE = { i32: 0x7f, v128: 0x7b, func: 0x60, emptyBlock: 0x40 };
const EXTERNAL = { func: 0x00, memory: 0x02 };
const LIMITS_MIN_ONLY = 0x00;
const OP = {
  block: 0x02,
  loop: 0x03,
  end: 0x0b,
  brIf: 0x0d,
  localGet: 0x20,
  localSet: 0x21,
  localTee: 0x22,
  i32Load: 0x28,
  i32Store: 0x36,
  i32Const: 0x41,
  i32Eqz: 0x45,
  i32Ne: 0x47,
  i32Add: 0x6a,
  i32Mul: 0x6c,
  i32Shl: 0x74,
  simdPrefix: 0xfd,
};
// Opcodes after the 0xFD prefix, from the core spec's binary format (vector instructions).
const SIMD = {
  v128Load: 0x00,
  v128Load8x8S: 0x01, // loads 8 bytes, sign-extends each to an i16 lane
  v128Const: 0x0c,
  i32x4ExtractLane: 0x1b,
  i32x4Add: 0xae,
  i32x4DotI16x8S: 0xba,
};

/** Unsigned LEB128. */
function u32(value) {
  const bytes = [];
  do {
    let byte = value & 0x7f;
    value >>>= 7;
    if (value !== 0) byte |= 0x80;
    bytes.push(byte);
  } while (value !== 0);
  return bytes;
}

/** Signed LEB128 (i32.const immediates). */
function s32(value) {
  const bytes = [];
  for (;;) {
    const byte = value & 0x7f;
    value >>= 7;
    const done = (value === 0 && (byte & 0x40) === 0) || (value === -1 && (byte & 0x40) !== 0);
    bytes.push(done ? byte : byte | 0x80);
    if (done) return bytes;
  }
}

const vector = (items) => [...u32(items.length), ...items.flat()];
const name = (text) => vector([...new TextEncoder().encode(text)]);
const section = (id, content) => [id, ...u32(content.length), ...content];
const simd = (opcode, ...immediates) => [OP.simdPrefix, ...u32(opcode), ...immediates];
/** Memory immediate: the alignment hint as log2 bytes, then a constant byte offset. */
const memarg = (alignLog2, offset) => [...u32(alignLog2), ...u32(offset)];

// Locals of the scanning function; its parameters come first.
const QUERY_AT = 0; // i16 query codes, 16-byte aligned
const ROWS_AT = 1; // i32 row indices, read two at a time
const ROW_COUNT = 2; // even: a caller with an odd list repeats its last row
const OUT_AT = 3; // one i32 dot per row
const OUT_END = 4;
const CODES_A = 5; // the pair's rows, advanced 16 codes per step
const CODES_B = 6;
const CODES_A_END = 7;
const QUERY_PART_AT = 8;
const SUM_A = 9;
const SUM_B = 10;
const QUERY_PART = 11;
// OUT_END to QUERY_PART_AT are i32, SUM_A to QUERY_PART v128.
const LOCALS = [
  [QUERY_PART_AT - OUT_END + 1, TYPE.i32],
  [QUERY_PART - SUM_A + 1, TYPE.v128],
];

const get = (local) => [OP.localGet, local];
const set = (local) => [OP.localSet, local];
const i32 = (value) => [OP.i32Const, ...s32(value)];
const increase = (local, amount) => [...get(local), ...i32(amount), OP.i32Add, ...set(local)];
const ZERO_V128 = simd(SIMD.v128Const, ...new Array(16).fill(0));

/** dotRows(queryAt, rowsAt, rowCount, outAt): for each listed row, Σ codes·query as an i32.
 * The two rows of a pair may be the same one.
 *
 * Shaped after what V8 compiles well, as measured: rows go in pairs so that each query load
 * serves two rows, and the dims are walked by a loop of 16 codes per step. Unrolling a whole
 * row instead had V8 issue every load first and spill most of them to the stack (2× slower).
 * Codes are widened by v128.load8x8_s, one instruction on x64 (pmovsxbw), then multiplied
 * and pairwise added by i32x4.dot_i16x8_s (pmaddwd). */
function dotRowsBody(dims) {
  const rowCodesAt = (listOffset, local) => [
    ...get(ROWS_AT), OP.i32Load, ...memarg(2, listOffset), ...i32(dims), OP.i32Mul, ...set(local),
  ];
  const accumulate = (sum, codesAt, offset) => [
    ...get(sum),
    ...get(codesAt), ...simd(SIMD.v128Load8x8S, ...memarg(3, offset)),
    ...get(QUERY_PART), ...simd(SIMD.i32x4DotI16x8S),
    ...simd(SIMD.i32x4Add), ...set(sum),
  ];
  const eightCodes = (offset) => [
    ...get(QUERY_PART_AT), ...simd(SIMD.v128Load, ...memarg(4, 2 * offset)), ...set(QUERY_PART),
    ...accumulate(SUM_A, CODES_A, offset),
    ...accumulate(SUM_B, CODES_B, offset),
  ];
  const laneSum = (sum) => {
    const lane = (index) => [...get(sum), ...simd(SIMD.i32x4ExtractLane, index)];
    return [...lane(0), ...lane(1), OP.i32Add, ...lane(2), OP.i32Add, ...lane(3), OP.i32Add];
  };
  const code = [
    OP.block, TYPE.emptyBlock,
    ...get(ROW_COUNT), OP.i32Eqz, OP.brIf, 0,
    ...get(OUT_AT), ...get(ROW_COUNT), ...i32(2), OP.i32Shl, OP.i32Add, ...set(OUT_END),
    OP.loop, TYPE.emptyBlock, // over pairs of rows
    ...rowCodesAt(0, CODES_A), ...rowCodesAt(4, CODES_B), ...increase(ROWS_AT, 8),
    ...get(CODES_A), ...i32(dims), OP.i32Add, ...set(CODES_A_END),
    ...get(QUERY_AT), ...set(QUERY_PART_AT),
    ...ZERO_V128, ...set(SUM_A),
    ...ZERO_V128, ...set(SUM_B),
    OP.loop, TYPE.emptyBlock, // over the dims, 16 codes per step
    ...eightCodes(0), ...eightCodes(8),
    ...increase(QUERY_PART_AT, 32), ...increase(CODES_B, 16),
    ...get(CODES_A), ...i32(16), OP.i32Add, OP.localTee, CODES_A,
    ...get(CODES_A_END), OP.i32Ne, OP.brIf, 0,
    OP.end,
    ...get(OUT_AT), ...laneSum(SUM_A), OP.i32Store, ...memarg(2, 0),
    ...get(OUT_AT), ...laneSum(SUM_B), OP.i32Store, ...memarg(2, 4),
    ...get(OUT_AT), ...i32(8), OP.i32Add, OP.localTee, OUT_AT,
    ...get(OUT_END), OP.i32Ne, OP.brIf, 0,
    OP.end,
    OP.end,
    OP.end,
  ];
  const body = [...vector(LOCALS.map(([count, type]) => [...u32(count), type])), ...code];
  return [...u32(body.length), ...body];
}

/** The scanning module for `dims`-long codes; it imports its memory as env.memory. */
function scanModuleBytes(dims) {
  const dotRowsType = [TYPE.func, ...vector(new Array(4).fill(TYPE.i32)), ...vector([])];
  const memoryImport = [...name("env"), ...name("memory"), EXTERNAL.memory, LIMITS_MIN_ONLY, ...u32(1)];
  return new Uint8Array([
    ...WASM_HEADER,
    ...section(SECTION.type, vector([dotRowsType])),
    ...section(SECTION.import, vector([memoryImport])),
    ...section(SECTION.function, vector([u32(0)])),
    ...section(SECTION.export, vector([[...name("dotRows"), EXTERNAL.func, ...u32(0)]])),
    ...section(SECTION.code, vector([dotRowsBody(dims)])),
  ]);
}

// ---- Kernels: where the codes are kept and how their dots with a query are computed. ----
// Both hand out `codes` (rows × dims, valid until the next reserve or dots call) and return
// dots as a view that is likewise only valid until the next call.

class SimdKernel {
  #dims;
  #memory = new WebAssembly.Memory({ initial: 1 });
  #dotRows;
  #codeBytes = 0; // high-water mark of reserved codes; per-search scratch lies beyond it
  #codes = new Int8Array(0);

  /** @param {number} dims @param {WebAssembly.Module} module */
  static async create(dims, module) {
    const kernel = new SimdKernel(dims);
    const instance = await WebAssembly.instantiate(module, { env: { memory: kernel.#memory } });
    kernel.#dotRows = instance.exports.dotRows;
    return kernel;
  }

  constructor(dims) {
    this.#dims = dims;
  }

  get codes() {
    if (this.#codes.buffer !== this.#memory.buffer) this.#codes = new Int8Array(this.#memory.buffer);
    return this.#codes;
  }

  reserve(rows) {
    this.#codeBytes = Math.max(this.#codeBytes, rows * this.#dims);
    this.#ensureBytes(this.#codeBytes);
  }

  /** @param {Int16Array} query @param {Int32Array} rows @returns {Int32Array} a dot for each of `rows` */
  dots(query, rows) {
    const pairedCount = rows.length + (rows.length % 2);
    const queryAt = this.#codeBytes; // a multiple of dims, so 16-byte aligned
    const listAt = queryAt + 2 * this.#dims;
    const outAt = listAt + 4 * pairedCount;
    this.#ensureBytes(outAt + 4 * pairedCount);
    const buffer = this.#memory.buffer;
    new Int16Array(buffer, queryAt, this.#dims).set(query);
    const list = new Int32Array(buffer, listAt, pairedCount);
    list.set(rows);
    if (pairedCount > rows.length) list[rows.length] = rows[rows.length - 1];
    this.#dotRows(queryAt, listAt, pairedCount, outAt);
    return new Int32Array(buffer, outAt, rows.length);
  }

  #ensureBytes(bytes) {
    const held = this.#memory.buffer.byteLength;
    if (bytes <= held) return;
    this.#memory.grow(Math.ceil((Math.max(bytes, 2 * held) - held) / PAGE_BYTES));
  }
}

class ScalarKernel {
  #dims;
  #dots = new Int32Array(0);
  codes = new Int8Array(0);

  constructor(dims) {
    this.#dims = dims;
  }

  reserve(rows) {
    const bytes = rows * this.#dims;
    if (bytes <= this.codes.length) return;
    const grown = new Int8Array(Math.max(bytes, 2 * this.codes.length));
    grown.set(this.codes);
    this.codes = grown;
  }

  /** @param {Int16Array} query @param {Int32Array} rows @returns {Int32Array} a dot for each of `rows` */
  dots(query, rows) {
    if (this.#dots.length < rows.length) this.#dots = new Int32Array(Math.max(rows.length, 2 * this.#dots.length));
    const dots = this.#dots;
    const codes = this.codes;
    const dims = this.#dims;
    for (let i = 0; i < rows.length; i++) {
      const at = rows[i] * dims;
      let sum = 0; // at most dims × 127 × steps < 2^31: exact in an int32
      for (let d = 0; d < dims; d++) sum += codes[at + d] * query[d];
      dots[i] = sum;
    }
    return dots.subarray(0, rows.length);
  }
}

// ---- The search itself. ----

/** The query as i16 codes, as fine as an i32 dot can hold (dims × 127 × step ≤ 2^31 - 1:
 * 32767 steps up to 528 dims, fewer beyond), and the factor back. Coarser query codes
 * cost precision: at ±127, scores were off by up to 2e-3; at ±32767, by about 1e-5. */
function quantiseQuery(query) {
  let maxAbs = 0;
  for (let i = 0; i < query.length; i++) maxAbs = Math.max(maxAbs, Math.abs(query[i]));
  const codes = new Int16Array(query.length);
  if (maxAbs === 0) return { codes, scale: 0 };
  const steps = Math.min(32767, Math.floor(0x7fffffff / (query.length * 127)));
  const toCode = steps / maxAbs;
  for (let i = 0; i < query.length; i++) codes[i] = Math.round(query[i] * toCode);
  return { codes, scale: maxAbs / steps };
}

/** A TopK's pairs as the vector scan returns them: its scores are float32 values already
 * (rounded before ranking), so the conversion is exact. */
function float32Result(top) {
  const { docs, scores } = top.result();
  return { docs, scores: Float32Array.from(scores) };
}

class VectorScan {
  #dims;
  #kernel;
  #size = 0;
  #docs = new Int32Array(0);
  #scales = new Float32Array(0);
  #rowOfDoc = new Int32Array(0); // indexed by doc; -1 where absent
  #rowNumbers = new Int32Array(0); // 0, 1, 2…: the row list of a full scan

  /** @param {number} dims @param {SimdKernel | ScalarKernel} kernel */
  constructor(dims, kernel) {
    this.#dims = dims;
    this.#kernel = kernel;
  }

  /** Number of vectors held. */
  get size() {
    return this.#size;
  }

  /** Whether searches run on the WebAssembly SIMD kernel (else the plain-JS one). */
  get simd() {
    return this.#kernel instanceof SimdKernel;
  }

  /**
   * Appends vectors; a doc already held (or repeated later in the same call) is replaced.
   * Docs are non-negative and index an array (4 bytes per number up to the largest doc):
   * meant for sequence numbers such as the message table's, which it looks up 25× faster
   * than a Map can.
   * @param {Int32Array} docs
   * @param {Int8Array} codes docs.length × dims, vector i at [i × dims, (i + 1) × dims)
   * @param {Float32Array} scales vector i ≈ its codes × scales[i]
   */
  add(docs, codes, scales) {
    const dims = this.#dims;
    if (codes.length !== docs.length * dims || scales.length !== docs.length) {
      throw new RangeError(`expected ${docs.length} × ${dims} codes and ${docs.length} scales`);
    }
    let largestDoc = -1;
    for (const doc of docs) {
      if (doc < 0) throw new RangeError(`docs must be non-negative, not ${doc}`);
      largestDoc = Math.max(largestDoc, doc);
    }
    this.#indexDocsUpTo(largestDoc);
    this.#reserve(this.#size + docs.length);
    const stored = this.#kernel.codes;
    for (let i = 0; i < docs.length; i++) {
      let row = this.#rowOfDoc[docs[i]];
      if (row === -1) {
        row = this.#size++;
        this.#rowOfDoc[docs[i]] = row;
        this.#docs[row] = docs[i];
      }
      stored.set(codes.subarray(i * dims, (i + 1) * dims), row * dims);
      this.#scales[row] = scales[i];
    }
  }

  /**
   * Drops these docs (unknown ones are ignored). The last row fills each hole, so storage
   * stays compact and rows change order.
   * @param {Int32Array | number[]} docs
   */
  remove(docs) {
    const dims = this.#dims;
    const stored = this.#kernel.codes;
    for (const doc of docs) {
      const row = this.#rowOf(doc);
      if (row === -1) continue;
      this.#rowOfDoc[doc] = -1;
      const last = --this.#size;
      if (row === last) continue;
      stored.copyWithin(row * dims, last * dims, (last + 1) * dims);
      this.#docs[row] = this.#docs[last];
      this.#scales[row] = this.#scales[last];
      this.#rowOfDoc[this.#docs[row]] = row;
    }
  }

  clear() {
    this.#size = 0;
    this.#rowOfDoc.fill(-1);
  }

  /**
   * Gives held docs new numbers: from[i] becomes to[i], in one step, so the two lists may
   * share numbers (provisional ids to the mirror's docs). Unknown docs in `from` are
   * ignored; a doc not in `from` keeps its number. Throws RangeError, changing nothing,
   * if a number would then be held twice or is negative.
   * @param {Int32Array} from
   * @param {Int32Array} to
   */
  relabel(from, to) {
    if (from.length !== to.length) throw new RangeError("relabel needs as many new docs as old");
    const docs = this.#docs.slice(0, this.#size);
    let largestDoc = -1;
    for (let i = 0; i < from.length; i++) {
      const row = this.#rowOf(from[i]);
      if (row === -1) continue;
      if (to[i] < 0) throw new RangeError(`docs must be non-negative, not ${to[i]}`);
      docs[row] = to[i];
    }
    for (const doc of docs) largestDoc = Math.max(largestDoc, doc);
    const rowOfDoc = new Int32Array(Math.max(largestDoc + 1, this.#rowOfDoc.length)).fill(-1);
    for (let row = 0; row < docs.length; row++) {
      if (rowOfDoc[docs[row]] !== -1) throw new RangeError(`doc ${docs[row]} would be held twice`);
      rowOfDoc[docs[row]] = row;
    }
    this.#docs.set(docs);
    this.#rowOfDoc = rowOfDoc;
  }

  /**
   * The k best docs by inner product with `query`, best first, ties by smaller doc.
   * @param {Float32Array} query dims long, unit length
   * @param {number} k
   * @param {Int32Array | null} [allow] if given, only these docs may be returned
   * @returns {{ docs: Int32Array, scores: Float32Array }}
   */
  topK(query, k, allow = null) {
    if (query.length !== this.#dims) throw new RangeError(`expected a query of ${this.#dims} values`);
    const capacity = Math.max(0, Math.min(k, this.#size));
    const top = new TopK(capacity);
    if (capacity === 0) return float32Result(top);
    const { rows, allowed } = allow === null ? { rows: this.#everyRow(), allowed: null } : this.#allowedRows(allow);
    if (rows.length === 0) return float32Result(top);
    const { codes: queryCodes, scale: queryScale } = quantiseQuery(query);
    const dots = this.#kernel.dots(queryCodes, rows);
    const docs = this.#docs;
    const scales = this.#scales;
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i];
      if (allowed !== null && allowed[row] === 0) continue;
      // Rounded to float32 before ranking, so that ties are judged on the value returned.
      const score = Math.fround(dots[i] * scales[row] * queryScale);
      if (score >= top.floor) top.offer(score, docs[row]);
    }
    return float32Result(top);
  }

  /** The rows to score for an allow list, and a mark of the allowed ones when that is not
   * all of them. Unknown and repeated docs are dropped here. */
  #allowedRows(allow) {
    const allowed = new Uint8Array(this.#size);
    const rows = new Int32Array(Math.min(allow.length, this.#size));
    let count = 0;
    for (let i = 0; i < allow.length; i++) {
      const row = this.#rowOf(allow[i]);
      if (row === -1 || allowed[row] === 1) continue;
      allowed[row] = 1;
      rows[count++] = row;
    }
    if (count >= FULL_SCAN_SHARE * this.#size) return { rows: this.#everyRow(), allowed };
    return { rows: rows.subarray(0, count), allowed: null };
  }

  #rowOf(doc) {
    return doc >= 0 && doc < this.#rowOfDoc.length ? this.#rowOfDoc[doc] : -1;
  }

  #indexDocsUpTo(largestDoc) {
    const index = this.#rowOfDoc;
    if (largestDoc < index.length) return;
    this.#rowOfDoc = new Int32Array(Math.max(largestDoc + 1, 2 * index.length)).fill(-1);
    this.#rowOfDoc.set(index);
  }

  #everyRow() {
    if (this.#rowNumbers.length < this.#size) {
      this.#rowNumbers = Int32Array.from({ length: this.#docs.length }, (_, row) => row);
    }
    return this.#rowNumbers.subarray(0, this.#size);
  }

  #reserve(rows) {
    this.#kernel.reserve(rows);
    if (rows <= this.#docs.length) return;
    const capacity = Math.max(rows, 2 * this.#docs.length);
    const docs = new Int32Array(capacity);
    const scales = new Float32Array(capacity);
    docs.set(this.#docs.subarray(0, this.#size));
    scales.set(this.#scales.subarray(0, this.#size));
    this.#docs = docs;
    this.#scales = scales;
  }
}

const scanModules = new Map(); // dims -> Promise<WebAssembly.Module>, or null where SIMD is missing

/** The compiled scanning module for `dims`, or null when the engine cannot run it. */
function scanModule(dims) {
  if (!scanModules.has(dims)) {
    const bytes = scanModuleBytes(dims);
    const supported = typeof WebAssembly === "object" && WebAssembly.validate(bytes);
    scanModules.set(dims, supported ? WebAssembly.compile(bytes) : null);
  }
  return scanModules.get(dims);
}

/** A scan of vectors padded with zeros to the SIMD width (16 codes): zeros add nothing
 * to a dot product, so models of any size (26, 1536, ...) are scanned alike. */
class PaddedScan {
  #dims;
  #width;
  #scan;

  constructor(dims, width, scan) {
    this.#dims = dims;
    this.#width = width;
    this.#scan = scan;
  }

  get size() {
    return this.#scan.size;
  }

  get simd() {
    return this.#scan.simd;
  }

  add(docs, codes, scales) {
    if (codes.length !== docs.length * this.#dims) {
      throw new RangeError(`expected ${docs.length * this.#dims} codes, got ${codes.length}`);
    }
    const padded = new Int8Array(docs.length * this.#width);
    for (let row = 0; row < docs.length; row++) {
      padded.set(codes.subarray(row * this.#dims, (row + 1) * this.#dims), row * this.#width);
    }
    this.#scan.add(docs, padded, scales);
  }

  remove(docs) {
    this.#scan.remove(docs);
  }

  relabel(from, to) {
    this.#scan.relabel(from, to);
  }

  topK(query, k, allow = null) {
    if (query.length !== this.#dims) throw new RangeError(`expected a query of ${this.#dims} values`);
    const padded = new Float32Array(this.#width);
    padded.set(query);
    return this.#scan.topK(padded, k, allow);
  }

  clear() {
    this.#scan.clear();
  }
}

/**
 * An empty store of int8-quantised vectors, searched by inner product.
 * @param {number} dims vector length (padded inside to a multiple of 16, the SIMD width)
 * @param {{ simd?: boolean }} [options] simd: false forces the plain-JS kernel
 * @returns {Promise<VectorScan | PaddedScan>}
 */
export async function createVectorScan(dims, { simd = true } = {}) {
  if (!Number.isInteger(dims) || dims <= 0) {
    throw new RangeError(`dims must be a positive integer, not ${dims}`);
  }
  const width = Math.ceil(dims / 16) * 16;
  const module = simd ? scanModule(width) : null;
  const kernel = module ? await SimdKernel.create(width, await module) : new ScalarKernel(width);
  const scan = new VectorScan(width, kernel);
  return width === dims ? scan : new PaddedScan(dims, width, scan);
}
