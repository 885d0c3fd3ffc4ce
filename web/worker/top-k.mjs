// The best k (score, doc) pairs of a search, shared by the vector scan and the term index.

/** The best `capacity` (score, doc) pairs offered, kept sorted: best score first, ties by
 * smaller doc; each may carry a 32-bit tag along. Insertion into a short sorted array beats
 * a heap for the small k of search. */
export class TopK {
  /** Offers scoring below this cannot enter (-Infinity until full); NaN never passes `>=`. */
  floor = -Infinity;
  #scores;
  #docs;
  #tags;
  #count = 0;

  /** @param {number} capacity how many pairs are kept */
  constructor(capacity) {
    this.#scores = new Float64Array(capacity);
    this.#docs = new Int32Array(capacity);
    this.#tags = new Uint32Array(capacity);
  }

  /** Keeps (score, doc) if it ranks among the best so far.
   * @param {number} score @param {number} doc @param {number} [tag] returned with the pair */
  offer(score, doc, tag = 0) {
    const scores = this.#scores;
    const docs = this.#docs;
    const tags = this.#tags;
    let slot = this.#count;
    if (slot === scores.length) {
      if (!ranksBefore(score, doc, scores[slot - 1], docs[slot - 1])) return;
      slot--;
    } else {
      this.#count++;
    }
    for (; slot > 0 && ranksBefore(score, doc, scores[slot - 1], docs[slot - 1]); slot--) {
      scores[slot] = scores[slot - 1];
      docs[slot] = docs[slot - 1];
      tags[slot] = tags[slot - 1];
    }
    scores[slot] = score;
    docs[slot] = doc;
    tags[slot] = tag;
    if (this.#count === scores.length) this.floor = scores[this.#count - 1];
  }

  /** The pairs kept, best first, as new arrays (scores in doubles, as offered).
   * @returns {{ docs: Int32Array, scores: Float64Array, tags: Uint32Array }} */
  result() {
    const count = this.#count;
    return { docs: this.#docs.slice(0, count), scores: this.#scores.slice(0, count), tags: this.#tags.slice(0, count) };
  }
}

/** Whether (score, doc) ranks before (otherScore, otherDoc): higher score, or the same and a smaller doc. */
export const ranksBefore = (score, doc, otherScore, otherDoc) =>
  score > otherScore || (score === otherScore && doc < otherDoc);
