// Exact token counts for OpenAI encodings with gpt-tokenizer. Each encoding's bundle
// (1-2 MB) is imported the first time it is asked for, never at boot.
const ENCODINGS = ["o200k_base", "cl100k_base"];
// Special-token text (e.g. "<|endoftext|>") in a message is just text to the API.
const PLAIN_TEXT = { disallowedSpecial: new Set() };

export function createTokenCounter(runtimeUrl) {
  const loading = new Map();
  const load = (encoding) => {
    if (!ENCODINGS.includes(encoding)) throw new Error(`unknown encoding ${encoding}`);
    if (!loading.has(encoding)) loading.set(encoding, import(`${runtimeUrl}tokenizers/${encoding}.mjs`));
    return loading.get(encoding);
  };
  return {
    encodings: ENCODINGS,
    /** Counts of many texts in one call: an Int32Array, one entry per text. */
    async count(encoding, texts) {
      const { countTokens } = await load(encoding);
      const counts = new Int32Array(texts.length);
      for (let i = 0; i < texts.length; i++) counts[i] = countTokens(texts[i], PLAIN_TEXT);
      return counts;
    },
  };
}
