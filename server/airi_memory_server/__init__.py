"""The airi-memory sync server: a per-user ordered log of sync operations over HTTP.

Clients push batches of operations and pull what every device pushed since a cursor;
they converge by merging with the rules in `merge` (docs/sync-protocol.md). The server
keeps the log only, so any number of processes can serve one database.
"""
