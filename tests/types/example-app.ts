// An app written against the generated airi-memory.d.ts: it calls every facade method
// with correctly typed arguments and reads fields of the results. tests/unit/test_facade.py
// compiles it with `tsc --noEmit` (strict) and checks that it names every method.
import { createMemorySystem, eraseMemorySystem, openMemorySystem } from "airi-memory";
import type { BootProgress, ChatHistoryItem, ChatSessionMeta, MemorySystem } from "airi-memory";

const progress: number[] = [];

export async function exampleApp(): Promise<string[]> {
  const opening = openMemorySystem({
    userId: "alice",
    onProgress: (step: BootProgress) => progress.push(step.fraction),
    retention: { enabled: false, policy: { maxSessions: 50 } },
    summarizer: { provider: "callback", summarize: async ({ messages }) => `${messages.length} messages` },
    embeddings: { provider: "custom", dimensions: 3, embed: ({ texts }) => texts.map(() => [1, 0, 0]) },
    timeouts: { closeMs: 5000 },
  });
  const early: Promise<string> = opening.ping(); // queued until boot is done
  const memory: MemorySystem = await opening.whenReady;
  const seen: string[] = [await early, String(memory.ready + memory.bootMs), memory.userId];
  seen.push(memory.versions.pyodide, memory.versions.airiMemory, ...memory.mounts);
  seen.push(String(memory.bootPhases.python ?? 0), String(memory.quarantined.length), String(memory.restored?.through ?? "none"));
  const loaded: MemorySystem = await memory.whenLoaded;
  seen.push(String(loaded.loaded ?? 0), loaded.versions.duckdb ?? "no DuckDB", String(loaded.bootPhases.loaded ?? 0));
  const again = await createMemorySystem({ userId: "bob", baseUrl: "/dist/" });
  await again.close();

  memory.addEventListener("change", (event) => seen.push(...event.detail.sessionIds));
  memory.addEventListener("boot-progress", (event) => seen.push(event.detail.phase));
  const onQuarantine = (event: CustomEvent<{ records: { key: string }[] }>) => seen.push(event.detail.records[0].key);
  memory.addEventListener("quarantine", onQuarantine);
  memory.removeEventListener("quarantine", onQuarantine);

  // storage
  await memory.storage.setItem("local:notes:1", { text: "hi" });
  await memory.storage.setItem("local:notes:gone", undefined);
  await memory.storage.setItemRaw("local:notes:raw", new Uint8Array([1, 2]));
  await memory.storage.setItems([{ key: "local:notes:2", value: 2 }]);
  const value: unknown = await memory.storage.getItem("local:notes:1");
  seen.push(JSON.stringify(value), JSON.stringify(await memory.storage.getItemRaw("local:notes:raw")));
  const items = await memory.storage.getItems(["local:notes:1"]);
  seen.push(items[0].key, String(await memory.storage.hasItem("local:notes:2")));
  seen.push(...(await memory.storage.getKeys("local")), ...(await memory.storage.getKeys()));
  await memory.storage.removeItem("local:notes:2");
  await memory.storage.clear("session");
  seen.push(...(await memory.storage.getMounts()).map((mount) => `${mount.base}:${mount.driver}`));

  // sessions
  const session: ChatSessionMeta = await memory.sessions.createSession({ title: "Plans", tags: ["work"] });
  const id = session.sessionId;
  seen.push(session.title, session.characterId, String(session.createdAt + session.updatedAt));
  seen.push((await memory.sessions.getSession(id))?.title ?? "none");
  seen.push(...(await memory.sessions.listSessions({ limit: 5, pinned: false })).map((s) => s.sessionId));
  seen.push(String((await memory.sessions.getAllSessions()).length));
  seen.push((await memory.sessions.renameSession(id, "Trips")).title);
  seen.push(String((await memory.sessions.pinSession(id)).pinned), String((await memory.sessions.pinSession(id, false)).pinned));
  seen.push(...(await memory.sessions.tagSession(id, ["a", "b"])).tags);
  seen.push(String((await memory.sessions.archiveSession(id)).archived));
  seen.push(String((await memory.sessions.unarchiveSession(id)).archived));
  const added: ChatHistoryItem = await memory.sessions.addMessage(id, { role: "user", content: "Book a train" });
  seen.push(added.id, added.role, String(added.createdAt));
  await memory.sessions.addMessage(id, { role: "assistant", content: [{ type: "text", text: "Done" }], id: "m2", createdAt: 1 });
  const updated = await memory.sessions.updateMessage(id, added.id, { content: "Book a plane" });
  seen.push(typeof updated.content === "string" ? updated.content : updated.content.map((part) => part.text ?? "").join(""));
  seen.push(String(await memory.sessions.deleteMessage(id, "m2")));
  seen.push(...(await memory.sessions.loadSessionMessages(id)).map((m) => m.id));
  seen.push(...(await memory.sessions.getSessionMessages(id)).map((m) => m.role));
  seen.push(...(await memory.sessions.messagesPage(id, 0, 10)).map((m) => m.id));
  seen.push(...(await memory.sessions.latestMessages(id)).map((m) => m.id), String((await memory.sessions.latestMessages(id, 2)).length));
  seen.push(String((await memory.sessions.persistSessionMessages(id)).messages));
  const fork = await memory.sessions.forkSession({ fromSessionId: id, atIndex: 1, reason: "try again" });
  seen.push(fork.parentSessionId ?? "", String(fork.forkIndex));
  for await (const message of memory.sessions.streamMessages(id, { batchSize: 2 })) seen.push(message.id);
  seen.push(String(await memory.sessions.setActiveSessionId(id)), String(await memory.sessions.getActiveSessionId()));
  seen.push(String(await memory.sessions.getActiveSessionId("cat")));
  memory.sessions.activeSessionId = fork.sessionId;
  seen.push(memory.sessions.activeSessionId ?? "", String(await memory.sessions.activeSessionIdSaved));
  seen.push(JSON.stringify(await memory.sessions.snapshot()), JSON.stringify(await memory.sessions.sync()));
  seen.push(JSON.stringify((await memory.sessions.stats()).queue));
  seen.push(...(await memory.sessions.deleteOldSessions({ olderThan: 86_400_000 })).deleted);
  seen.push(String(await memory.sessions.deleteSession(fork.sessionId)));

  // context
  const entry = await memory.context.ingestContext({ sourceType: "module:weather", sourceId: "now", content: { sky: "clear" }, strategy: "replace-self" });
  seen.push(entry.sourceType, String(entry.createdAt), entry.strategy);
  seen.push(...Object.keys(await memory.context.getContextsSnapshot()));
  seen.push(...(await memory.context.getContexts()).map((e) => e.sourceId));
  seen.push(String(await memory.context.removeContext("module:weather", "now")), String(await memory.context.removeContext("module:none")));
  seen.push(String(await memory.context.clearContexts()));
  seen.push(...(await memory.context.registerProvider("module:clock", () => ({ now: Date.now() }))));
  seen.push(String(await memory.context.unregisterProvider("module:clock")));
  seen.push(JSON.stringify(await memory.context.setUserProfile({ name: "Alice" })), JSON.stringify(await memory.context.getUserProfile()));
  seen.push(JSON.stringify(await memory.context.setModuleState("game", { level: 3 })));

  // composition, search, embeddings, tokens
  const composed = await memory.composeMessages(id, { maxTokens: 4000, contextPlacement: "last-user", retrieval: { limit: 3 } });
  seen.push(String(composed.tokens.total), String(composed.droppedMessages), ...composed.messageIds);
  seen.push(String((await memory.composeMessages(id)).exact));
  const found = await memory.search({ query: "train", limit: 5, filters: { sessionIds: [id], roles: ["user"] }, strategy: "keyword" });
  seen.push(found.strategy, ...found.results.map((r) => `${r.sessionId}:${r.message.id}:${r.score}:${r.session?.title}`));
  seen.push(...(await memory.searchMessages("plane", { limit: 10 })).map((hit) => hit.message.id));
  seen.push(...(await memory.searchMessages("plane")).map((hit) => hit.sessionId));
  seen.push((await memory.embeddingsStatus()).state ?? "", String((await memory.indexEmbeddings()).indexed));
  seen.push(String((await memory.configureEmbeddings({ provider: "none" })).state));
  seen.push(String((await memory.configureEmbeddings({ provider: "custom", dimensions: 2, embed: ({ texts }) => texts.map(() => [0, 1]) })).pending));
  seen.push(...(await memory.countTokens(["hello", "world"], "o200k_base")).map(String));
  seen.push(String((await memory.countTokens(["hi"]))[0]), ...(await memory.tokenStats()).encodings);

  // retention, summaries, transfer
  const report = await memory.applyRetentionPolicy({ maxAge: 1000, deleteArchived: true });
  seen.push(...report.deletedExpired, String(report.activeSessions), String((await memory.applyRetentionPolicy()).ranAt));
  seen.push(JSON.stringify(await memory.applyMessageRetention(id, { maxMessagesPerSession: 100 })));
  seen.push(JSON.stringify(await memory.applyMessageRetention(id)));
  seen.push(String((await memory.retention.status()).scheduled), String((await memory.retention.start(true)).runs));
  seen.push(String((await memory.retention.start()).intervalMs), String((await memory.retention.stop()).inProgress));
  seen.push(JSON.stringify(await memory.summarizeOldContext(id, 10)), JSON.stringify(await memory.summarizeOldContext(id)));
  seen.push(String((await memory.configureSummarizer({ provider: "openai", model: "gpt-4o-mini", apiKey: "sk" })).configured));
  seen.push(String((await memory.configureSummarizer({ provider: "callback", summarize: () => "short" })).configured));
  const sync = await memory.configureSync({ enabled: false, endpoint: "http://127.0.0.1:8787", autoSync: false });
  seen.push(String(sync.recording), String((await memory.sync.status()).pending));
  seen.push(String((await memory.sync.deadLetters()).length), String(await memory.sync.retry([])), String(await memory.sync.discard(["none"])));
  await memory.sync.processSyncQueue().catch((error: Error) => seen.push(error.name));
  seen.push(String((await memory.configureSummarizer(null)).configured), JSON.stringify((await memory.summarizerStatus()).failures));
  const exported = await memory.exportSessions([id]);
  seen.push(exported.version, ...exported.sessions.map((s) => `${s.meta.sessionId}:${s.messages.length}`));
  const imported = await memory.importSessions(await memory.exportSessions(), { keepIds: false });
  seen.push(imported.format, ...imported.sessionIds, String((await memory.importSessions(JSON.stringify(exported))).messages));

  // diagnostics, info, the page's own
  seen.push(...(await memory.query("SELECT count(*) AS n FROM chat_messages WHERE session_id = ?", [id])).map((row) => String(row.n)));
  seen.push(String((await memory.query("SELECT 1 AS one")).length), ...Object.keys(await memory.schemas()), await memory.ping());
  seen.push(JSON.stringify(await memory.analytics()), String((await memory.info()).versions.duckdb), String((await memory.info()).activeSessionId));
  seen.push(String((await memory.diagnostics.bulkInsert(100)).rows), String((await memory.diagnostics.fillVectors()).filled));
  seen.push(String((await memory.diagnostics.sqlRoundTrips(3)).length), String((await memory.diagnostics.storedVectors(0)).texts));
  const estimate = await memory.estimateStorage();
  seen.push(String(estimate.usage ?? 0), String(estimate.quota), String(await memory.requestPersistence()));
  await memory._test?.block(10);
  await memory._test?.crash("duckdb");
  await memory._test?.failCommits("QuotaExceededError", 2);
  await memory._test?.failCopies(1);
  await memory.close();
  const erased = await eraseMemorySystem({ baseUrl: "/dist/" }); // once every system is closed
  seen.push(String(erased.records + erased.copyFiles));
  return seen;
}
