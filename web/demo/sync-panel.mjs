// The demo's cloud sync panel: endpoint and key (prefilled when `make demo` started a
// sync server: /demo-sync.json), turn on or off, sync now with a progress bar, the queue
// and the dead letters with retry and discard. The key stays in this page's memory.

const $ = (id) => document.getElementById(id);

function timeOf(ms) {
  return ms ? new Date(ms).toLocaleTimeString() : "never";
}

export async function mountSyncPanel(memory) {
  const line = $("sync-status");
  const output = $("sync-output");
  const bar = $("sync-progress");
  const letters = $("dead-letters");

  async function render() {
    const status = await memory.sync.status();
    line.dataset.pending = String(status.pending);
    line.dataset.failed = String(status.failed);
    line.textContent = status.enabled
      ? `On (${status.autoSync ? `every ${status.syncInterval / 1000} s` : "by hand"}): ` +
        `${status.pending} pending, ${status.inFlight} in flight, ${status.failed} failed; ` +
        `last success ${timeOf(status.lastSuccessAt)}` +
        (status.lastError ? `; last error: ${status.lastError}` : "")
      : `Off${status.recording ? ` (${status.pending} change(s) recorded for when it is on)` : ""}.`;
    letters.replaceChildren();
    for (const letter of await memory.sync.deadLetters()) {
      const item = document.createElement("li");
      item.dataset.id = letter.id;
      item.textContent = `${letter.type ?? "?"} ${letter.resource ?? "?"} ${letter.sessionId ?? ""} (${letter.retries} tries): ${letter.error} `;
      for (const [label, action] of [["Retry", "retry"], ["Discard", "discard"]]) {
        const button = document.createElement("button");
        button.type = "button";
        button.className = `button ${action}-letter`;
        button.textContent = label;
        button.addEventListener("click", guard(async () => {
          await memory.sync[action]([letter.id]);
          await render();
        }));
        item.append(button);
      }
      letters.append(item);
    }
  }

  function guard(action) {
    return async (event) => {
      event?.preventDefault();
      try {
        await action();
      } catch (error) {
        output.textContent = `${error.name}: ${error.message}`;
      }
    };
  }

  memory.addEventListener("sync-progress", ({ detail }) => {
    bar.max = detail.total || Math.max(detail.done, 1);
    bar.value = detail.done;
    output.textContent = `${detail.phase}: ${detail.done}${detail.total ? ` of ${detail.total}` : ""}`;
  });
  $("sync-form").addEventListener("submit", guard(async () => {
    const enabled = !$("sync-off").checked;
    await memory.configureSync({
      enabled,
      endpoint: $("sync-endpoint").value.trim() || null,
      apiKey: $("sync-key").value || null,
      autoSync: $("sync-auto").checked,
    });
    output.textContent = enabled ? "Sync is on." : "Sync is off.";
    await render();
  }));
  $("sync-now").addEventListener("click", guard(async () => {
    const report = await memory.sync.processSyncQueue();
    output.textContent = JSON.stringify(report, null, 2);
    await render();
  }));
  $("sync-refresh").addEventListener("click", guard(render));
  // Another tab's writes and pulled changes move the queue: show it as it is now.
  memory.addEventListener("change", () => render().catch(() => {}));
  try {
    const offered = await fetch("/demo-sync.json", { cache: "no-store" });
    if (offered.ok) {
      const { endpoint, apiKey } = await offered.json();
      $("sync-endpoint").value = endpoint;
      $("sync-key").value = apiKey;
      output.textContent = "A local sync server is running (make demo): turn sync on to use it.";
    }
  } catch {
    // No sync server offered: the fields stay empty.
  }
  await render();
}
