"""Cloud sync: the outbox every write records into, push and pull with the sync server,
and the merge that applies other devices' operations (docs/sync-protocol.md).

Kept free of imports here: the sync server imports ``airi_memory.sync.hlc`` alone.
"""
