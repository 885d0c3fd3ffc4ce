"""Storage port: unstorage semantics over pluggable drivers."""

from .driver import Driver
from .memory import MemoryDriver
from .storage import Mount, Storage

LOCAL_MOUNT = "local"
OUTBOX_MOUNT = "outbox"
LOCAL_BASE = "airi-local"
OUTBOX_BASE = "airi-sync-queue"

__all__ = [
    "LOCAL_BASE",
    "LOCAL_MOUNT",
    "OUTBOX_BASE",
    "OUTBOX_MOUNT",
    "Driver",
    "MemoryDriver",
    "Mount",
    "Storage",
]
