// The demo's search panel: a query with strategy and filters, results with their score,
// the retrievers that found them and the matched terms; a progress bar while the model
// loads or messages are embedded.

const $ = (id) => document.getElementById(id);

export function mountSearchPanel(memory) {
  const output = $("search-output");
  const bar = $("embedding-progress");
  const label = $("embedding-label");

  function showStatus(status) {
    if (status.phase === "model") {
      bar.max = status.total || 1;
      bar.value = status.loaded;
      label.textContent = `Loading the embedding model: ${(status.loaded / 1e6).toFixed(1)} of ${(status.total / 1e6).toFixed(1)} MB`;
      return;
    }
    const total = status.indexed + status.pending;
    bar.max = total || 1;
    bar.value = status.indexed;
    label.textContent = status.state === "off"
      ? `Semantic search is off (${status.note ?? "no embeddings"})`
      : `${status.model}: ${status.state}, ${status.indexed} of ${total} messages embedded` +
        (status.ratePerSecond ? ` (${status.ratePerSecond}/s)` : "") +
        (status.lastError ? ` - ${status.lastError}` : "");
  }
  memory.addEventListener("embedding-progress", (event) => showStatus(event.detail));

  $("search-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const filters = {};
    const roles = [...document.querySelectorAll("input[name=search-role]:checked")].map((box) => box.value);
    if (roles.length) filters.roles = roles;
    const character = $("search-character").value.trim();
    if (character) filters.characterIds = [character];
    if ($("search-this-session").checked && memory.sessions.activeSessionId) {
      filters.sessionIds = [memory.sessions.activeSessionId];
    }
    const list = $("search-results");
    list.replaceChildren();
    try {
      const { results, tookMs } = await memory.search({
        query: $("search-query").value,
        strategy: $("search-strategy").value,
        limit: 10,
        threshold: Number($("search-threshold").value) || 0,
        filters,
      });
      output.textContent = `${results.length} result(s) in ${tookMs} ms`;
      for (const hit of results) {
        const item = document.createElement("li");
        const text = typeof hit.message.content === "string" ? hit.message.content : JSON.stringify(hit.message.content);
        const meta = document.createElement("small");
        meta.textContent = ` score ${hit.score.toFixed(3)} via ${hit.retrievers.join(" + ")}` +
          (hit.matchedTerms.length ? `, terms: ${hit.matchedTerms.join(", ")}` : "") +
          ` (${hit.session?.title ?? hit.sessionId}, ${hit.message.role})`;
        item.append(text, meta);
        list.append(item);
      }
    } catch (error) {
      output.textContent = `${error.name}: ${error.message}`;
    }
  });
  return memory.embeddingsStatus().then(showStatus);
}
