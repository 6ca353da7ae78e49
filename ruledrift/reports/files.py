"""Write a report file atomically: readers see the old file or the new one, never half of one."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from ruledrift.errors import ReportError


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in the same directory, then rename it.

    Parent directories are created. Any `OSError` becomes a `ReportError` naming the path, and
    the temporary file never outlives the call.
    """
    if not path.name or path.name == "..":
        raise ReportError(f"cannot write report {path}: not a file name")
    temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # O_EXCL: never reuse an existing file; mode 0o666 lets the umask decide, as for any file
        # the user writes (tempfile.mkstemp would force 0o600).
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
        with os.fdopen(os.open(temp, flags, 0o666), "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    except OSError as exc:
        raise ReportError(f"cannot write report {path}: {exc.strerror or exc}") from exc
    finally:
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)
