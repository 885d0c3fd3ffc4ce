// The HTTP port, for the providers and the sync endpoint the user configured: one request
// with a timeout, JSON text both ways. It never throws across the bridge: failures come
// back as {error} or {timedOut}.
export async function request(method, url, headersJson, body, timeoutMs) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    const response = await fetch(url, {
      method,
      headers: JSON.parse(headersJson),
      body: body ?? undefined,
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
