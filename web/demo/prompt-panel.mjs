// The demo's prompt panel: what composeMessages would send for the active session (each
// part with its token count, against the budget), the context snapshot with a form to
// set a module's state, and retention: run it now, summarise, see the last report.

const $ = (id) => document.getElementById(id);
const MODELS = { "gpt-4o": {}, "claude-3.5-sonnet": {}, local: {}, "custom (maxTokens)": null };

function textOf(message) {
  if (typeof message.content === "string") return message.content;
  return (message.content ?? []).map((part) => part.text ?? `[${part.type}]`).join(" ");
}

export function mountPromptPanel(memory) {
  const select = $("preview-model");
  for (const name of Object.keys(MODELS)) select.append(new Option(name, name));
  const output = $("prompt-output");
  const guard = (action) => async (event) => {
    event?.preventDefault();
    try {
      await action(event);
    } catch (error) {
      output.textContent = `${error.name}: ${error.message}`;
    }
  };

  async function renderPreview() {
    const sessionId = memory.sessions.activeSessionId;
    const table = $("prompt-parts");
    table.replaceChildren();
    if (!sessionId) {
      output.textContent = "Select or create a session to preview its prompt.";
      return;
    }
    const model = select.value;
    const options = MODELS[model] === null
      ? { maxTokens: Number($("preview-max-tokens").value) || 4096 }
      : { model };
    options.contextPlacement = $("preview-placement").value;
    options.details = true;
    const composed = await memory.composeMessages(sessionId, options);
    composed.messages.forEach((message, index) => {
      const part = composed.parts[index];
      const row = table.insertRow();
      row.dataset.kind = part.kind;
      for (const cell of [part.kind + (part.withContext ? " + context" : ""), message.role, part.tokens, textOf(message).slice(0, 160)]) {
        row.insertCell().textContent = String(cell);
      }
    });
    const { tokens } = composed;
    const meter = $("budget-meter");
    meter.max = tokens.budget;
    meter.value = tokens.total;
    output.textContent =
      `${tokens.total} of ${tokens.budget} tokens (${tokens.maxTokens} minus ${tokens.reserveTokens} kept for the reply), ` +
      `${composed.exact ? "exact" : "estimated"} with ${composed.encoding}; ` +
      `system ${tokens.system}, context ${tokens.context}, summary ${tokens.summary}, history ${tokens.history}; ` +
      `${composed.droppedMessages} older message(s) left out` +
      (composed.coveredBySummary ? `, ${composed.coveredBySummary} covered by the summary` : "") +
      (Object.keys(composed.contextErrors).length ? `; provider errors: ${JSON.stringify(composed.contextErrors)}` : "");
    $("context-snapshot").textContent = JSON.stringify(composed.context, null, 2);
  }

  async function renderRetention() {
    const status = await memory.retention.status();
    $("retention-status").textContent =
      `${status.scheduled ? `scheduled every ${status.intervalMs / 60000} min` : "not scheduled"}, ${status.runs} run(s)` +
      (status.lastError ? `, last error: ${status.lastError}` : "");
  }

  $("preview-form").addEventListener("submit", guard(renderPreview));
  $("module-form").addEventListener("submit", guard(async () => {
    const state = JSON.parse($("module-state").value || "null");
    await memory.context.setModuleState($("module-name").value, state);
    await renderPreview();
  }));
  $("run-retention").addEventListener("click", guard(async () => {
    $("retention-report").textContent = JSON.stringify(await memory.applyRetentionPolicy(), null, 2);
    await renderRetention();
    document.dispatchEvent(new CustomEvent("airi:sessions-changed"));
  }));
  $("summarize-now").addEventListener("click", guard(async () => {
    const sessionId = memory.sessions.activeSessionId;
    if (!sessionId) throw Object.assign(new Error("no active session"), { name: "Demo" });
    const threshold = Number($("summary-threshold").value) || 10;
    $("retention-report").textContent = JSON.stringify(await memory.summarizeOldContext(sessionId, threshold), null, 2);
    document.dispatchEvent(new CustomEvent("airi:sessions-changed"));
    await renderPreview();
  }));
  document.addEventListener("airi:active-session", guard(renderPreview));
  return Promise.all([renderPreview(), renderRetention()]);
}
