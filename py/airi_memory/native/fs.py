"""The filesystem driver (CPython): unstorage's ``fs`` layout, ``a:b:c`` -> ``base/a/b/c``.

Each write goes to a temporary file that is renamed into place, so a crash leaves the
old value or the new one, never half of one.
"""

import os
import tempfile
from pathlib import Path
from typing import Any

from ..errors import InvalidKeyError, InvalidValueError
from ..storage.driver import Driver


class FsDriver(Driver):
    name = "fs"

    def __init__(self, base: str | os.PathLike[str]) -> None:
        self._root = Path(base).resolve()
        self._root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        path = self._root.joinpath(*key.split(":")) if key else self._root
        if path != self._root and self._root not in path.parents:
            raise InvalidKeyError(f"key {key!r} points outside the storage folder")
        return path

    async def has_item(self, key: str) -> bool:
        return self._path(key).is_file()

    async def get_item(self, key: str) -> Any:
        path = self._path(key)
        return path.read_text(encoding="utf-8") if path.is_file() else None

    async def get_item_raw(self, key: str) -> Any:
        path = self._path(key)
        return path.read_bytes() if path.is_file() else None

    async def set_item(self, key: str, value: Any) -> None:
        data = value if isinstance(value, bytes) else str(value).encode("utf-8")
        self._write(key, data)

    async def set_item_raw(self, key: str, value: Any) -> None:
        if isinstance(value, str):
            value = value.encode("utf-8")
        if not isinstance(value, bytes | bytearray | memoryview):
            raise InvalidValueError(
                f"raw value for key {key!r} must be bytes or str on the fs driver, "
                f"got {type(value).__name__}"
            )
        self._write(key, bytes(value))

    def _write(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)

    async def remove_item(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    async def get_keys(self, base: str) -> list[str]:
        keys = []
        folder = self._path(base.rsplit(":", 1)[0]) if ":" in base else self._root
        for path in folder.rglob("*"):
            if path.is_file() and not path.name.startswith(".tmp-"):
                key = ":".join(path.relative_to(self._root).parts)
                if key.startswith(base):
                    keys.append(key)
        return sorted(keys)

    async def clear(self, base: str) -> None:
        for key in await self.get_keys(base):
            await self.remove_item(key)
