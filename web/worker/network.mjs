// What the sync runner needs of the browser beyond fetch: whether there is a network
// (navigator.onLine, kept current by the worker's online/offline events) and one holder
// at a time, across every tab of this origin, of a named lock (Web Locks).
let online = self.navigator?.onLine ?? true;
self.addEventListener?.("online", () => (online = true));
self.addEventListener?.("offline", () => (online = false));

/** The page's word (web/airi-memory.mjs forwards its online/offline events): a worker's
 *  own events miss some ways a browser goes offline, such as DevTools' emulation. */
export function setOnline(value) {
  online = value === true;
}

export const network = {
  online: () => online,
  /** Resolves, once this tab holds the lock, with the function that releases it. */
  acquire(name) {
    if (!self.navigator?.locks) return Promise.resolve(() => {});
    return new Promise((held) => {
      self.navigator.locks.request(name, () => new Promise((release) => held(release)));
    });
  },
};
