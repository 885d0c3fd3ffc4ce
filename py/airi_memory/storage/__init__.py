"""Storage port: unstorage semantics over pluggable drivers."""

from .driver import Driver
from .memory import MemoryDriver
from .storage import Mount, Storage

LOCAL_MOUNT = "local"
OUTBOX_MOUNT = "outbox"
LOCAL_BASE = "airi-local"
OUTBOX_BASE = "airi-sync-queue"
# Where the browser keeps both mounts: unstorage's IndexedDB defaults, shared with AIRI.
BROWSER_DB_NAME = "keyval-store"
BROWSER_STORE_NAME = "keyval"

__all__ = [
    "BROWSER_DB_NAME",
    "BROWSER_STORE_NAME",
    "LOCAL_BASE",
    "LOCAL_MOUNT",
    "OUTBOX_BASE",
    "OUTBOX_MOUNT",
    "Driver",
    "MemoryDriver",
    "Mount",
    "Storage",
]
