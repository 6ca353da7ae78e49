"""Files: a bounded, safe read of a file a user named (a suite, a saved report), and report files,
checked before the run and written atomically after it.

A file is read only if it is a regular file, opened without blocking (a FIFO without a writer
would wait forever) and read no further than one byte past its limit (`/dev/zero`, a file that
grows while it is read, a /proc file that says size 0).

A report goes only to a regular file. A directory, a device (`/dev/null`), a named pipe, a
socket or one of the process's own streams (`/dev/stdout`) at the path is refused and never
replaced; a symbolic link to a regular file is
written through (the link stays, its target gets the report); a link that leads nowhere is
refused. An existing report keeps its permissions and, where the process may set it, its owner.
The new content goes to a short temporary name beside the target and is renamed over it, so a
reader sees the old report or the new one, and the temporary file never outlives the write.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from pathlib import Path

from ruledrift.errors import ReportError
from ruledrift.text import terminal_safe

NAME_MAX = 255  # bytes in one name, when the file system does not say (Linux, macOS, Windows)
PATH_MAX = 4096  # bytes in a whole path, likewise (Linux)
NOT_A_FILE_NAME = "not a file name: give a file path such as out/report.json"
_MISSING = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)  # nothing to write through to
# Names of the process's own open files (Linux; /dev/fd also on macOS and the BSDs): a report
# there would replace whatever the stream is (a shell's `> out.txt`) with a file of its own.
_STREAM = re.compile(r"/dev/std(in|out|err)|/dev/fd/.*|/proc/[^/]+/(task/[^/]+/)?fd/.*")
MAX_LINKS = 40  # as the Linux kernel follows
_KINDS = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
)


def shown(path: Path | str) -> str:
    """A path for a message: control characters visible, never sent to the terminal raw."""
    return terminal_safe(str(path))


def _kind(mode: int) -> str:
    """`a character device`, …: what a file that is not a regular file is."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _existing_ancestor(path: Path) -> Path:
    """The nearest ancestor of `path` that exists (the file system root at worst)."""
    for parent in path.parents:
        if os.path.lexists(parent):
            return parent
    return Path(path.anchor or os.sep)


def _limit(directory: Path, name: str, default: int) -> int:
    try:
        return os.pathconf(directory, name)
    except (OSError, ValueError, AttributeError):  # no pathconf on Windows
        return default


def path_length_problem(path: Path) -> str | None:
    """What makes `path` too long for its file system (a name longer than NAME_MAX bytes, a
    whole path longer than PATH_MAX), or None. Checked before anything uses the path, so that
    `File name too long` is a message and never a traceback."""
    try:
        return _length_problem(Path(os.path.abspath(path)))
    except ValueError as error:  # a name that cannot be encoded (a lone surrogate)
        return f"cannot use this path ({error}): give another path"


def _length_problem(absolute: Path) -> str | None:
    directory = _existing_ancestor(absolute)
    name_max = _limit(directory, "PC_NAME_MAX", NAME_MAX)
    for part in absolute.parts:
        size = len(os.fsencode(part))
        if size > name_max:
            return (
                f"the name {shown(part[:40])}… is {size} bytes long, longer than the {name_max} "
                "bytes a name may have on this file system: give a shorter name"
            )
    size = len(os.fsencode(str(absolute)))
    path_max = _limit(directory, "PC_PATH_MAX", PATH_MAX)
    if size >= path_max:
        return (
            f"the path is {size} bytes long, longer than the {path_max - 1} bytes a path may "
            "have on this file system: give a shorter path"
        )
    return None


def names_a_stream(path: Path) -> bool:
    """Whether `path` is, or links through, one of the process's open files (`/dev/stdout`,
    `/dev/fd/1`, `/proc/self/fd/1`), whatever the stream is (a terminal, a pipe, a file)."""
    current = os.path.abspath(path)
    for _ in range(MAX_LINKS):
        current = os.path.join(
            os.path.realpath(os.path.dirname(current)), os.path.basename(current)
        )
        if _STREAM.fullmatch(current):
            return True
        if not os.path.islink(current):
            return False
        current = os.path.join(os.path.dirname(current), os.readlink(current))
    return False


def report_target(path: Path) -> Path:
    """Where a report for `path` is written: the path with every symbolic link followed (a
    link to a regular file is written through, not replaced)."""
    return Path(os.path.realpath(path))


def report_path_problem(path: Path) -> str | None:
    """Why a report cannot be written at `path`, or None: not a file name, too long, a directory,
    a device, a pipe or a socket, a link that leads nowhere, a folder that cannot be written.
    The message names the cause and the fix; the caller puts the option and path in front.
    Never raises."""
    try:
        return _problem(path)
    except (OSError, ValueError) as error:  # ValueError: a NUL byte, an unencodable name
        cause = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        return f"cannot use this path ({cause}): give another path"


def _problem(path: Path) -> str | None:
    if path.name in ("", ".", ".."):
        return NOT_A_FILE_NAME
    too_long = path_length_problem(path)
    if too_long:
        return too_long
    if names_a_stream(path):
        return (
            "is one of the process's open streams (like /dev/stdout), not a file of its own: "
            "give a file path, and print the report from there if you need it in the output"
        )
    try:
        found = os.stat(path)  # follows links: what a write would reach
    except OSError as error:
        if error.errno not in _MISSING:
            raise
        if os.path.islink(path):
            return (
                "is a symbolic link to a file that does not exist (or a loop of links): "
                "remove the link or give another path"
            )
        return _folder_problem(report_target(path))
    if stat.S_ISDIR(found.st_mode):
        return "is a directory: give a file path"
    if not stat.S_ISREG(found.st_mode):
        return (
            f"is {_kind(found.st_mode)}, not a regular file: reports are written only to "
            "regular files and nothing else is replaced (leave the option out for no report)"
        )
    return _folder_problem(report_target(path))


def _folder_problem(target: Path) -> str | None:
    """Whether the report's folder exists or can be created, and can be written."""
    too_long = path_length_problem(target)
    if too_long:
        return too_long
    ancestor = _existing_ancestor(target)
    if not ancestor.is_dir():
        return f"{shown(ancestor)} is not a directory: give a path in a folder"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return (
            f"cannot write in {shown(ancestor)} (no permission, or a read-only file system): "
            "give a path in a folder you can write to"
        )
    return None


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to the report file `path`: checked as `report_path_problem` does (a device or
    a pipe is never replaced), written to a temporary file beside the target, renamed over it.

    Parent directories are created; an existing report keeps its permissions. Any failure
    (including an `OSError`: disk full, a read-only folder) raises `ReportError` naming the path
    and the cause, and the temporary file never outlives the call, whatever interrupts it.
    """
    problem = report_path_problem(path)
    if problem:
        raise ReportError(f"cannot write report {shown(path)}: {problem}")
    target = report_target(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _replace(target, data)
    except (OSError, ValueError) as error:
        cause = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise ReportError(f"cannot write report {shown(path)}: {cause}") from error


def _existing(target: Path) -> os.stat_result | None:
    """The target's status when it exists as a regular file, None when it does not exist;
    anything else there (put there during the run) is a ReportError and is left alone."""
    try:
        found = os.lstat(target)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(found.st_mode):
        kind = "a directory" if stat.S_ISDIR(found.st_mode) else _kind(found.st_mode)
        if stat.S_ISLNK(found.st_mode):
            kind = "a symbolic link"
        raise ReportError(
            f"cannot write report {shown(target)}: it is now {kind}, not a regular file, and "
            "was left as it is: give another path"
        )
    return found


def _replace(target: Path, data: bytes) -> None:
    # A short name (20 bytes), so that a target name of NAME_MAX bytes still has a temporary one.
    temp = target.with_name(f".ruledrift-{secrets.token_hex(4)}.tmp")
    try:
        # O_EXCL: never reuse an existing file (nor follow a link); 0o666 lets the umask decide
        # for a new report, as for any file the user writes (tempfile.mkstemp would force 0o600).
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
        with open(os.open(temp, flags, 0o666), "wb") as file:
            previous = _existing(target)
            if previous is not None:
                _keep_owner_and_mode(file.fileno(), previous)
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        _existing(target)  # checked again: a pipe or device put there meanwhile is not replaced
        os.replace(temp, target)
    finally:  # also on KeyboardInterrupt, SystemExit, CancelledError; after os.replace: ENOENT
        with contextlib.suppress(OSError):
            os.unlink(temp)


def _keep_owner_and_mode(fd: int, previous: os.stat_result) -> None:
    """The new file takes the old one's owner (where the process may set it: as root) and
    permissions (a 0600 report stays 0600). The owner first: chown clears set-id bits."""
    if hasattr(os, "fchown") and (previous.st_uid, previous.st_gid) != _owner(fd):
        with contextlib.suppress(PermissionError):
            os.fchown(fd, previous.st_uid, previous.st_gid)
    if hasattr(os, "fchmod"):
        os.fchmod(fd, stat.S_IMODE(previous.st_mode))


def _owner(fd: int) -> tuple[int, int]:
    found = os.fstat(fd)
    return found.st_uid, found.st_gid


# --- reading ---------------------------------------------------------------------------------

_SPECIAL_FILES = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class UnreadableFile(Exception):
    """Why a file cannot be read, in words that follow its path (`problem`); `what` (what the
    file was expected to be) is already in them where it helps."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


class FileTooBig(UnreadableFile):
    """A file over the limit; `size` says how big ("16,777,217 bytes", "more than N bytes"),
    so that the caller words what the limit is for."""

    def __init__(self, size: str) -> None:
        super().__init__(f"is {size}")
        self.size = size


def read_regular_file(path: Path, limit: int, *, what: str) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them. `what` says what it
    should have been ("expected a RuleDrift suite (a JSON file)"). Raises `UnreadableFile`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except ValueError:  # the only other thing os.open raises: a NUL character in the path
        raise UnreadableFile("cannot be opened: the path contains a NUL character") from None
    except OSError as error:
        raise UnreadableFile(_open_problem(error, what)) from None
    try:
        return _read_bounded(fd, limit, what)
    except OSError as error:
        raise UnreadableFile(f"cannot be read: {error.strerror or error}") from None
    finally:
        os.close(fd)


def _open_problem(error: OSError, what: str) -> str:
    if isinstance(error, FileNotFoundError):
        return "file not found"
    if isinstance(error, IsADirectoryError):
        return f"is a directory; {what}"
    if isinstance(error, PermissionError):
        return "cannot be read: permission denied"
    if error.errno == errno.ENAMETOOLONG:
        return (
            "cannot be opened: the path, or a name in it, is too long for the operating system "
            "(File name too long); use a shorter path"
        )
    return f"cannot be opened: {error.strerror or error}"


def _read_bounded(fd: int, limit: int, what: str) -> bytes:
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        raise UnreadableFile(f"is a directory; {what}")
    if not stat.S_ISREG(info.st_mode):
        kind = next((name for test, name in _SPECIAL_FILES if test(info.st_mode)), "a special file")
        raise UnreadableFile(
            f"is {kind}, not a regular file; {what}: pipes and devices are refused, as reading "
            "one may never end"
        )
    if info.st_size > limit:
        raise FileTooBig(f"{info.st_size:,} bytes")
    chunks: list[bytes] = []
    remaining = limit + 1  # one byte more: a file that grew while it was read, or says size 0
    while remaining > 0 and (chunk := os.read(fd, remaining)):
        chunks.append(chunk)
        remaining -= len(chunk)
    if remaining == 0:
        raise FileTooBig(f"more than {limit:,} bytes")
    return b"".join(chunks)
