// The local embedding model in a worker of its own, so inference never blocks Python:
// all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime-web's WASM backend, one thread, with the
// model's WordPiece tokenizer from @huggingface/tokenizers. Sentence vector: mean over the
// attention mask, then L2-normalised (as sentence-transformers does).
//
// Messages in: {id, kind: "load"} and {id, kind: "embed", texts}. Out: {id, ok, value}
// or {id, ok: false, error}, and {event: "progress", loaded, total} while the model loads.
import { Tokenizer } from "@huggingface/tokenizers";
import * as ort from "onnxruntime-web/wasm";

const MODEL = "all-MiniLM-L6-v2";
const MAX_TOKENS = 256; // sentence-transformers' limit for this model
const DIMENSIONS = 384;
const modelUrl = new URL(`./models/${MODEL}/`, import.meta.url);

let loading = null;

async function fetchWithProgress(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url} answered HTTP ${response.status}`);
  const total = Number(response.headers.get("Content-Length")) || 0;
  const reader = response.body.getReader();
  const chunks = [];
  let loaded = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    loaded += value.length;
    self.postMessage({ event: "progress", loaded, total });
  }
  const bytes = new Uint8Array(loaded);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return bytes;
}

function load() {
  loading ??= (async () => {
    const started = performance.now();
    ort.env.wasm.wasmPaths = new URL("./ort/", import.meta.url).href;
    ort.env.wasm.numThreads = 1; // two threads were slower on 2 cores (measured)
    ort.env.wasm.proxy = false;
    const [tokenizerJson, tokenizerConfig, model] = await Promise.all([
      fetch(new URL("tokenizer.json", modelUrl)).then((r) => r.json()),
      fetch(new URL("tokenizer_config.json", modelUrl)).then((r) => r.json()),
      fetchWithProgress(new URL("onnx/model.onnx", modelUrl)),
    ]);
    const tokenizer = new Tokenizer(tokenizerJson, tokenizerConfig);
    const session = await ort.InferenceSession.create(model, { executionProviders: ["wasm"] });
    return { tokenizer, session, loadMs: performance.now() - started };
  })();
  return loading;
}

// Texts that run together are padded to the longest of them, and padding is wasted
// work: sorted by length, a new group starts once padding would exceed a quarter.
const PADDING_SLACK = 1.25;

function lengthGroups(encoded) {
  const order = encoded.map((_, row) => row).sort((a, b) => encoded[a].length - encoded[b].length);
  const groups = [];
  let group = [];
  let tokens = 0;
  for (const row of order) {
    const width = encoded[row].length; // the widest so far: lengths ascend
    if (group.length && (group.length + 1) * width > PADDING_SLACK * (tokens + width)) {
      groups.push(group);
      group = [];
      tokens = 0;
    }
    group.push(row);
    tokens += width;
  }
  if (group.length) groups.push(group);
  return groups;
}

async function embedGroup(session, encoded, out) {
  const width = Math.max(1, ...encoded.map((ids) => ids.length));
  const size = encoded.length * width;
  const inputIds = new BigInt64Array(size);
  const mask = new BigInt64Array(size);
  encoded.forEach((ids, row) => {
    ids.forEach((id, col) => {
      inputIds[row * width + col] = BigInt(id);
      mask[row * width + col] = 1n;
    });
  });
  const dims = [encoded.length, width];
  const output = await session.run({
    input_ids: new ort.Tensor("int64", inputIds, dims),
    attention_mask: new ort.Tensor("int64", mask, dims),
    token_type_ids: new ort.Tensor("int64", new BigInt64Array(size), dims),
  });
  const hidden = output.last_hidden_state.data; // [batch, width, 384]
  encoded.forEach((ids, row) => {
    const vector = out[row];
    for (let col = 0; col < ids.length; col++) {
      const base = (row * width + col) * DIMENSIONS;
      for (let d = 0; d < DIMENSIONS; d++) vector[d] += hidden[base + d];
    }
    let norm = 0;
    for (let d = 0; d < DIMENSIONS; d++) norm += (vector[d] /= ids.length) * vector[d];
    norm = Math.sqrt(norm) || 1;
    for (let d = 0; d < DIMENSIONS; d++) vector[d] /= norm;
  });
}

async function embed(texts) {
  const { tokenizer, session } = await load();
  // Longer texts keep their first tokens and the closing [SEP].
  const encoded = texts.map((text) => {
    const ids = tokenizer.encode(text).ids;
    return ids.length <= MAX_TOKENS ? ids : [...ids.slice(0, MAX_TOKENS - 1), ids.at(-1)];
  });
  const vectors = new Float32Array(texts.length * DIMENSIONS);
  const rowOf = (row) => vectors.subarray(row * DIMENSIONS, (row + 1) * DIMENSIONS);
  for (const group of lengthGroups(encoded)) {
    await embedGroup(session, group.map((row) => encoded[row]), group.map(rowOf));
  }
  return vectors;
}

self.onmessage = async ({ data: { id, kind, texts } }) => {
  try {
    if (kind === "load") {
      const { loadMs } = await load();
      self.postMessage({ id, ok: true, value: { model: MODEL, dimensions: DIMENSIONS, loadMs } });
    } else {
      const vectors = await embed(texts);
      self.postMessage({ id, ok: true, value: vectors }, [vectors.buffer]);
    }
  } catch (error) {
    self.postMessage({ id, ok: false, error: String(error?.message ?? error) });
  }
};
