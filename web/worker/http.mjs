// The HTTP port for providers the user configured: one JSON POST with a timeout.
// It never throws across the bridge: failures come back as {error} or {timedOut}.
export async function postJson(url, headersJson, body, timeoutMs) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: JSON.parse(headersJson),
      body,
      signal: controller.signal,
      credentials: "omit",
    });
    return { status: response.status, text: await response.text() };
  } catch (error) {
    if (controller.signal.aborted) return { timedOut: true };
    return { error: String(error?.message ?? error) };
  } finally {
    clearTimeout(timer);
  }
}
