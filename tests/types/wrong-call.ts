// Must NOT compile: addMessage's sessionId is a string (tests/unit/test_facade.py checks
// that tsc refuses this file, so the type check can fail).
import { createMemorySystem } from "airi-memory";

export async function wrongCall(): Promise<void> {
  const memory = await createMemorySystem();
  await memory.sessions.addMessage(42, { role: "user", content: "hi" });
}
