// The demo page: shows that the system is up, lets a person write and read a key, chat
// in sessions, see the prompt that would be sent, and sync with a server.
import { createMemorySystem } from "../airi-memory.mjs";
import { mountPromptPanel } from "./prompt-panel.mjs";
import { mountSearchPanel } from "./search-panel.mjs";
import { mountSessionsPanel } from "./sessions-panel.mjs";
import { mountSyncPanel } from "./sync-panel.mjs";

const $ = (id) => document.getElementById(id);
const status = $("status");

function show(element, text) {
  element.textContent = typeof text === "string" ? text : JSON.stringify(text, null, 2);
}

function parseValue(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

async function renderMounts(memory) {
  const mounts = await memory.storage.getMounts();
  const container = $("mounts");
  container.replaceChildren();
  for (const { base, driver } of mounts) {
    const keys = await memory.storage.getKeys(base);
    const heading = document.createElement("h3");
    heading.textContent = `${base || "(root)"} — ${driver}, ${keys.length} key(s)`;
    const list = document.createElement("ul");
    for (const key of keys.slice(0, 200)) {
      const item = document.createElement("li");
      item.textContent = key;
      list.append(item);
    }
    container.append(heading, list);
  }
}

async function main() {
  const bar = $("boot-progress");
  const memory = await createMemorySystem({
    userId: "demo",
    // Each boot phase as it ends (pyodide, imports, python): a fraction up to 1.
    onProgress: ({ phase, fraction }) => {
      bar.value = fraction;
      status.textContent = `Starting… ${phase} (${Math.round(fraction * 100)} %)`;
    },
  });
  globalThis.memory = memory; // handy in the console
  bar.hidden = true;
  status.dataset.state = "ready";
  status.textContent = `Ready in ${memory.ready.toFixed(0)} ms.`;
  const info = $("system-info");
  const rows = {
    "Ready after": `${memory.ready.toFixed(0)} ms`,
    "Loaded after": "loading the history…", // DuckDB starts beside: see whenLoaded below
    "User": memory.userId,
    "Pyodide": memory.versions.pyodide,
    "Python": memory.versions.python,
    "DuckDB": "starting…",
    "airi-memory": memory.versions.airiMemory,
    "Mounts": memory.mounts.map((m) => m || "(root: memory)").join(", "),
  };
  for (const [name, value] of Object.entries(rows)) {
    const dt = document.createElement("dt");
    const dd = document.createElement("dd");
    dt.textContent = name;
    dd.textContent = value;
    dd.dataset.field = name;
    info.append(dt, dd);
  }
  const field = (name) => info.querySelector(`dd[data-field="${name}"]`);
  memory.whenLoaded.then(
    () => {
      field("Loaded after").textContent = `${memory.loaded.toFixed(0)} ms`;
      field("DuckDB").textContent = memory.versions.duckdb;
    },
    (error) => {
      field("Loaded after").textContent = `failed: ${error.message}`;
    },
  );

  const output = $("kv-output");
  const guard = (action) => async (event) => {
    event?.preventDefault();
    try {
      await action();
    } catch (error) {
      show(output, `${error.name}: ${error.message}`);
    }
  };
  $("kv-form").addEventListener("submit", guard(async () => {
    await memory.storage.setItem($("kv-key").value, parseValue($("kv-value").value));
    show(output, `written ${$("kv-key").value}`);
    await renderMounts(memory);
  }));
  $("kv-read").addEventListener("click", guard(async () => {
    show(output, await memory.storage.getItem($("kv-key").value));
  }));
  $("kv-remove").addEventListener("click", guard(async () => {
    await memory.storage.removeItem($("kv-key").value);
    show(output, `removed ${$("kv-key").value}`);
    await renderMounts(memory);
  }));
  $("refresh-keys").addEventListener("click", guard(() => renderMounts(memory)));
  await renderMounts(memory);
  await mountSessionsPanel(memory);
  await mountPromptPanel(memory);
  await mountSearchPanel(memory);
  await mountSyncPanel(memory);
}

main().catch((error) => {
  status.dataset.state = "error";
  status.textContent = `Failed to start: ${error.name}: ${error.message}`;
});
