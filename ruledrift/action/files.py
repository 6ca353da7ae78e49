"""Files the action wrote as root (GitHub runs Docker actions as root), given back to the owner
of the workspace so later steps and self-hosted runners can use and remove them."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path


def _inside(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


def created_root(path: Path, boundary: Path) -> Path | None:
    """Before the run: what the run will own when it writes `path` — its top-most missing
    ancestor below `boundary`, or `path` itself when it exists. None outside `boundary`."""
    path, boundary = Path(os.path.abspath(path)), Path(os.path.abspath(boundary))
    if not _inside(path, boundary) or path == boundary:
        return None
    root = path
    for parent in path.parents:
        if parent == boundary or parent.exists():
            break
        root = parent
    return root


def _walk(root: Path) -> Iterator[Path]:
    yield root
    if root.is_dir() and not root.is_symlink():
        for directory, subdirectories, files in os.walk(root):
            for name in [*subdirectories, *files]:
                yield Path(directory, name)


def give_back(roots: Sequence[Path], owner: Path) -> None:
    """Chown what the run wrote (as root) to the owner of `owner`, so later steps and checkouts
    on self-hosted runners can change and delete it (actions/runner#434). Never follows links."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return
    try:
        stat = owner.stat()
    except OSError:
        return
    if stat.st_uid == 0 and stat.st_gid == 0:
        return
    for root in roots:
        if not root.exists() and not root.is_symlink():
            continue
        for path in _walk(root):
            try:
                os.chown(path, stat.st_uid, stat.st_gid, follow_symlinks=False)
            except OSError as error:
                print(f"ruledrift action: cannot give {path} back: {error}", file=sys.stderr)
