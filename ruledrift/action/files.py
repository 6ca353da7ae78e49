"""Files the action wrote as root (GitHub runs Docker actions as root), given back to the owner
of the workspace so later steps and self-hosted runners can use and remove them."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from ruledrift.text import terminal_safe


def inside(path: Path, directory: Path) -> bool:
    """Whether `path` is `directory` or below it, both taken as they are (not resolved)."""
    return path == directory or directory in path.parents


def real_path(path: Path) -> Path:
    """`path` absolute, with every symbolic link followed (as far as it exists)."""
    return Path(os.path.realpath(path))


def created_root(path: Path, boundary: Path) -> Path | None:
    """Before the run: what the run will own when it writes `path` — its top-most missing
    ancestor below `boundary`, or `path` itself when it exists. Symbolic links are followed
    first (a link committed in the repository can lead anywhere): None when the real path is
    outside `boundary`, or unusable (too long)."""
    try:
        path, boundary = real_path(path), real_path(boundary)
        if not inside(path, boundary) or path == boundary:
            return None
        root = path
        for parent in path.parents:
            if parent == boundary or os.path.lexists(parent):
                break
            root = parent
    except (OSError, ValueError):
        return None
    return root


def _walk(root: Path) -> Iterator[Path]:
    yield root
    if root.is_dir() and not root.is_symlink():
        for directory, subdirectories, files in os.walk(root):
            for name in [*subdirectories, *files]:
                yield Path(directory, name)


def _really_inside(path: Path, root: Path) -> bool:
    """Whether `path` (a link: the link itself, not its target) is really `root` or below it,
    once the links among its folders are followed. `root` is a real path (`created_root`)."""
    try:
        return inside(real_path(path.parent) / path.name, root)
    except (OSError, ValueError):
        return False


def give_back(roots: Sequence[Path], owner: Path) -> None:
    """Chown what the run wrote (as root) to the owner of `owner` (the workspace), so later
    steps and checkouts on self-hosted runners can change and delete it (actions/runner#434).

    `roots` come from `created_root`: real paths, inside their boundary when the run began.
    Checked again here, after the run: a root whose folders are now reached through a link, and
    anything that is not really below its root, is left alone; links are never followed."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return
    try:
        stat = owner.stat()
    except OSError:
        return
    if stat.st_uid == 0 and stat.st_gid == 0:
        return
    for root in roots:
        if not os.path.lexists(root):
            continue
        for path in _walk(root):
            if not _really_inside(path, root):
                shown = terminal_safe(str(path))
                print(
                    f"ruledrift action: not giving {shown} back: a symbolic link now leads it "
                    "elsewhere",
                    file=sys.stderr,
                )
                break
            try:
                os.chown(path, stat.st_uid, stat.st_gid, follow_symlinks=False)
            except OSError as error:
                shown = terminal_safe(str(path))
                print(f"ruledrift action: cannot give {shown} back: {error}", file=sys.stderr)
