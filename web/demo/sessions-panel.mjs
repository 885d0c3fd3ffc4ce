// The demo's sessions panel: create, switch, pin, archive, fork, delete; the active
// session's messages with an input box; export and import of JSON files.

const $ = (id) => document.getElementById(id);

export function mountSessionsPanel(memory) {
  const output = $("session-output");
  const say = (text) => (output.textContent = text);
  const guard = (action) => async (event) => {
    event?.preventDefault();
    try {
      await action(event);
    } catch (error) {
      say(`${error.name}: ${error.message}`);
    }
  };
  let active = memory.sessions.activeSessionId;

  async function renderList() {
    const archived = $("show-archived").checked;
    const sessions = await memory.sessions.listSessions({ limit: 100, ...(archived ? {} : { archived: false }) });
    const list = $("session-list");
    list.replaceChildren();
    for (const meta of sessions) {
      const item = document.createElement("li");
      item.className = meta.sessionId === active ? "active" : "";
      const button = document.createElement("button");
      const marks = `${meta.pinned ? "[pinned] " : ""}${meta.archived ? "[archived] " : ""}${meta.parentSessionId ? "[fork] " : ""}`;
      button.textContent = `${marks}${meta.title}`;
      button.dataset.sessionId = meta.sessionId;
      button.addEventListener("click", guard(() => select(meta.sessionId)));
      item.append(button);
      list.append(item);
    }
  }

  // Renders overlap (a session just selected while a message is sent): only the latest
  // one draws, and it draws in one step after its reads, so no list shows a turn twice.
  let latestRender = 0;
  async function renderMessages() {
    const render = ++latestRender;
    const meta = active ? await memory.sessions.getSession(active) : null;
    const messages = meta ? await memory.sessions.loadSessionMessages(active) : [];
    if (render !== latestRender) return;
    $("active-title").textContent = meta ? meta.title : "No session";
    const items = messages.map((message, index) => {
      const item = document.createElement("li");
      item.dataset.index = String(index);
      const role = document.createElement("span");
      role.className = "role";
      role.textContent = message.role;
      const text = typeof message.content === "string"
        ? message.content
        : message.content.map((part) => part.text ?? `[${part.type}]`).join(" ");
      item.append(role, text);
      return item;
    });
    const list = $("messages");
    list.replaceChildren(...items);
    list.scrollTop = list.scrollHeight;
  }

  async function select(sessionId) {
    active = sessionId;
    if (sessionId) await memory.sessions.setActiveSessionId(sessionId);
    await Promise.all([renderList(), renderMessages()]);
    document.dispatchEvent(new CustomEvent("airi:active-session"));
  }

  // A session being created and selected: a message sent meanwhile waits for it and goes
  // there (it went to the session active before, or to a session of its own if none was).
  let opening = null;
  $("new-session-form").addEventListener("submit", guard(async () => {
    const title = $("new-session-title").value.trim() || "New Conversation";
    $("new-session-title").value = "";
    opening = (async () => {
      const meta = await memory.sessions.createSession({ title, systemPrompt: "You are AIRI, a friendly companion." });
      await select(meta.sessionId);
    })();
    try {
      await opening;
    } finally {
      opening = null;
    }
  }));
  $("message-form").addEventListener("submit", guard(async () => {
    const input = $("message-input");
    if (!input.value.trim()) return;
    if (opening) await opening.catch(() => {}); // its own handler reports a failure
    if (!active) await select((await memory.sessions.createSession({ title: "New Conversation" })).sessionId);
    await memory.sessions.addMessage(active, { role: "user", content: input.value });
    input.value = "";
    await Promise.all([renderList(), renderMessages()]);
    document.dispatchEvent(new CustomEvent("airi:active-session"));
  }));
  $("show-archived").addEventListener("change", guard(renderList));
  $("session-actions").addEventListener("click", guard(async (event) => {
    const action = event.target.dataset?.action;
    if (!action || !active) return;
    const meta = await memory.sessions.getSession(active);
    if (action === "pin") await memory.sessions.pinSession(active, !meta.pinned);
    if (action === "archive") {
      await (meta.archived ? memory.sessions.unarchiveSession(active) : memory.sessions.archiveSession(active));
    }
    if (action === "fork") {
      const count = (await memory.sessions.loadSessionMessages(active)).length;
      const fork = await memory.sessions.forkSession({ fromSessionId: active, atIndex: count, reason: "demo fork" });
      return select(fork.sessionId);
    }
    if (action === "delete") {
      await memory.sessions.deleteSession(active);
      active = null;
    }
    await Promise.all([renderList(), renderMessages()]);
  }));
  $("export-sessions").addEventListener("click", guard(async () => {
    const data = await memory.exportSessions();
    const blob = new Blob([JSON.stringify(data, null, 2)], { type: "application/json" });
    const link = Object.assign(document.createElement("a"), {
      href: URL.createObjectURL(blob),
      download: "airi-conversations-export.json",
    });
    link.click();
    URL.revokeObjectURL(link.href);
    say(`exported ${data.sessions.length} session(s)`);
  }));
  $("import-file").addEventListener("change", guard(async (event) => {
    const [file] = event.target.files;
    if (!file) return;
    const report = await memory.importSessions(JSON.parse(await file.text()));
    event.target.value = "";
    say(`imported ${report.sessions} session(s), ${report.messages} message(s) (${report.format}); skipped ${report.skippedDuplicates} duplicate(s)`);
    await renderList();
  }));
  const refresh = () => Promise.all([renderList(), renderMessages()]).catch(() => {});
  memory.addEventListener("change", refresh);
  document.addEventListener("airi:sessions-changed", refresh);
  return select(active);
}
