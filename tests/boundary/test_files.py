"""Report files: regular files only (never a device or a pipe), whole files or none, permissions
kept, no temporary files left, and errors that name the path and the cause."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ruledrift.boundary.files import path_length_problem, report_path_problem, write_atomic
from ruledrift.errors import ExitCode, ReportError


def test_creates_parent_directories(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "report.json"
    write_atomic(path, b"{}\n")
    assert path.read_bytes() == b"{}\n"
    assert os.listdir(path.parent) == ["report.json"]


def test_replaces_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "report.xml"
    path.write_bytes(b"old and much longer content")
    write_atomic(path, b"new")
    assert path.read_bytes() == b"new"
    assert os.listdir(tmp_path) == ["report.xml"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_new_files_follow_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o027)
    try:
        write_atomic(tmp_path / "report.json", b"{}")
    finally:
        os.umask(previous)
    assert (tmp_path / "report.json").stat().st_mode & 0o777 == 0o640


def test_a_directory_in_the_way_is_a_report_error(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    target.mkdir()
    with pytest.raises(ReportError, match=re.escape(f"cannot write report {target}: ")) as caught:
        write_atomic(target, b"{}")
    assert caught.value.exit_code == ExitCode.USAGE
    assert os.listdir(tmp_path) == ["report.json"]
    assert target.is_dir()


def test_a_file_where_a_parent_directory_should_be_is_a_report_error(tmp_path: Path) -> None:
    (tmp_path / "out").write_bytes(b"not a directory")
    with pytest.raises(ReportError, match=r"out[/\\]report\.json"):
        write_atomic(tmp_path / "out" / "report.json", b"{}")
    assert os.listdir(tmp_path) == ["out"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "report.json"
    path.write_bytes(b"old")

    def no_space(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)
    with pytest.raises(ReportError, match="No space left on device"):
        write_atomic(path, b"new")
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["report.json"]


def test_a_path_without_a_file_name_is_a_report_error(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="not a file name"):
        write_atomic(tmp_path / "..", b"{}")


# --- only regular files: devices, pipes and sockets are refused, never replaced ----------------


def test_dev_null_is_refused_before_the_run_and_never_replaced() -> None:
    problem = report_path_problem(Path("/dev/null"))
    assert problem is not None
    assert "is a character device, not a regular file" in problem
    assert "leave the option out" in problem
    with pytest.raises(ReportError, match=r"cannot write report /dev/null: is a character device"):
        write_atomic(Path("/dev/null"), b"{}")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_dev_full_is_refused_and_never_replaced() -> None:
    with pytest.raises(ReportError, match="character device"):
        write_atomic(Path("/dev/full"), b"{}")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_fifo_is_refused_and_left_as_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    assert "is a named pipe (FIFO), not a regular file" in (report_path_problem(fifo) or "")
    with pytest.raises(ReportError, match="named pipe"):
        write_atomic(fifo, b"{}")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert os.listdir(tmp_path) == ["report.json"]


@pytest.mark.process
def test_a_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.sock"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        assert "is a socket" in (report_path_problem(path) or "")
        with pytest.raises(ReportError, match="socket"):
            write_atomic(path, b"{}")
        assert stat.S_ISSOCK(os.lstat(path).st_mode)


def test_a_device_put_in_place_during_the_write_is_not_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check is made again just before the rename: a race cannot replace a pipe."""
    path = tmp_path / "report.json"
    real_fsync = os.fsync

    def fifo_appears(fd: int) -> None:
        real_fsync(fd)
        os.mkfifo(path)

    monkeypatch.setattr(os, "fsync", fifo_appears)
    with pytest.raises(ReportError, match="it is now a named pipe"):
        write_atomic(path, b"{}")
    assert stat.S_ISFIFO(os.lstat(path).st_mode)
    assert os.listdir(tmp_path) == ["report.json"]


STDOUT_AS_REPORT = """
import sys
from pathlib import Path
from ruledrift.errors import ReportError
from ruledrift.boundary.files import report_path_problem, write_atomic
print("printed before", flush=True)
print(report_path_problem(Path(sys.argv[1])), file=sys.stderr)
try:
    write_atomic(Path(sys.argv[1]), b"written")
except ReportError as error:
    print(error, file=sys.stderr)
"""


@pytest.mark.process
@pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="Linux /proc")
@pytest.mark.parametrize("stdout_is", ["a pipe", "a file"])
@pytest.mark.parametrize("name", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1", "link"])
def test_the_processs_own_stdout_is_refused(tmp_path: Path, stdout_is: str, name: str) -> None:
    """/dev/stdout links to whatever stdout is: a pipe (`… | jq`) or a shell's `> out.txt`, which
    a report must not replace either."""
    (tmp_path / "link").symlink_to("/dev/stdout")
    path = tmp_path / name
    output = tmp_path / "out.txt"
    with output.open("w") as file:
        done = subprocess.run(
            [sys.executable, "-c", STDOUT_AS_REPORT, str(path)],
            stdout=file if stdout_is == "a file" else subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=True,
        )
    printed = output.read_text() if stdout_is == "a file" else done.stdout
    assert printed == "printed before\n"
    problem, error = done.stderr.splitlines()
    assert problem.startswith("is one of the process's open streams (like /dev/stdout)")
    assert error == f"cannot write report {path}: {problem}"
    assert os.path.islink("/dev/stdout")
    assert sorted(os.listdir(tmp_path)) == ["link", "out.txt"]


def test_a_link_to_a_regular_file_is_written_through(tmp_path: Path) -> None:
    target = tmp_path / "kept" / "report.json"
    target.parent.mkdir()
    target.write_bytes(b"old")
    link = tmp_path / "report.json"
    link.symlink_to(target)
    assert report_path_problem(link) is None
    write_atomic(link, b"new")
    assert link.is_symlink()
    assert target.read_bytes() == b"new"
    assert sorted(os.listdir(tmp_path)) == ["kept", "report.json"]
    assert os.listdir(target.parent) == ["report.json"]


def test_a_link_to_a_device_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "report.json"
    link.symlink_to("/dev/null")
    with pytest.raises(ReportError, match="character device"):
        write_atomic(link, b"{}")
    assert os.readlink(link) == "/dev/null"


@pytest.mark.parametrize("points_to", ["missing.json", "report.json"])  # dangling, a loop
def test_a_link_that_leads_nowhere_is_refused(tmp_path: Path, points_to: str) -> None:
    link = tmp_path / "report.json"
    link.symlink_to(tmp_path / points_to)
    assert "symbolic link to a file that does not exist" in (report_path_problem(link) or "")
    with pytest.raises(ReportError, match="symbolic link"):
        write_atomic(link, b"{}")
    assert os.listdir(tmp_path) == ["report.json"]
    assert link.is_symlink()


def test_a_usable_path_has_no_problem(tmp_path: Path) -> None:
    assert report_path_problem(tmp_path / "new" / "deeper" / "report.json") is None
    (tmp_path / "old.json").write_bytes(b"{}")
    assert report_path_problem(tmp_path / "old.json") is None


def test_a_folder_in_the_way_is_named(tmp_path: Path) -> None:
    (tmp_path / "out").write_bytes(b"")
    problem = report_path_problem(tmp_path / "out" / "deep" / "r.json")
    assert problem == f"{tmp_path / 'out'} is not a directory: give a path in a folder"
    assert report_path_problem(tmp_path) == "is a directory: give a file path"


# --- permissions and owner are kept -------------------------------------------------------------


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_an_existing_reports_permissions_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_bytes(b"old")
    path.chmod(0o600)
    previous = os.umask(0o022)
    try:
        write_atomic(path, b"answers")
    finally:
        os.umask(previous)
    assert path.stat().st_mode & 0o7777 == 0o600
    assert path.read_bytes() == b"answers"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root")
def test_an_existing_reports_owner_is_kept_by_root(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_bytes(b"old")
    os.chown(path, 12345, 23456)
    write_atomic(path, b"new")
    assert (path.stat().st_uid, path.stat().st_gid) == (12345, 23456)


# --- temporary files, long names, failures ------------------------------------------------------


@pytest.mark.parametrize(
    "interruption", [KeyboardInterrupt, SystemExit, asyncio.CancelledError, MemoryError]
)
def test_an_interrupted_write_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, interruption: type[BaseException]
) -> None:
    path = tmp_path / "report.json"
    path.write_bytes(b"old")

    def interrupted(fd: int) -> None:
        raise interruption()

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(interruption):
        write_atomic(path, b"new")
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["report.json"]


def test_a_name_of_the_longest_length_can_be_written(tmp_path: Path) -> None:
    name = "r" * 250 + ".json"  # 255 bytes: NAME_MAX; a temporary name must not be longer
    write_atomic(tmp_path / name, b"{}")
    assert os.listdir(tmp_path) == [name]


def test_a_name_too_long_is_a_message_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / ("r" * 251 + ".json")
    problem = report_path_problem(path)
    assert problem is not None
    assert "is 256 bytes long, longer than the 255 bytes" in problem
    assert "give a shorter name" in problem
    with pytest.raises(ReportError, match="256 bytes long"):
        write_atomic(path, b"{}")
    assert os.listdir(tmp_path) == []


def test_a_path_too_long_is_a_message_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path.joinpath(*["d" * 200] * 30, "report.json")
    assert "give a shorter path" in (report_path_problem(path) or "")
    assert "give a shorter path" in (path_length_problem(path) or "")
    with pytest.raises(ReportError, match="give a shorter path"):
        write_atomic(path, b"{}")
    assert os.listdir(tmp_path) == []


def test_a_nul_byte_is_a_message_not_a_traceback(tmp_path: Path) -> None:
    assert "embedded null byte" in (report_path_problem(tmp_path / "a\0b.json") or "")
    with pytest.raises(ReportError, match="embedded null byte"):
        write_atomic(tmp_path / "a\0b.json", b"{}")


def test_an_unencodable_name_is_a_message_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "a\ud800.json"  # a lone surrogate: no file system encoding takes it
    assert "surrogates not allowed" in (path_length_problem(path) or "")
    with pytest.raises(ReportError, match="surrogates not allowed"):
        write_atomic(path, b"{}")
    assert os.listdir(tmp_path) == []


def test_control_characters_in_the_path_never_reach_the_message_raw(tmp_path: Path) -> None:
    path = tmp_path / "\x1b[2Jreport.json"
    path.mkdir()
    with pytest.raises(ReportError) as caught:
        write_atomic(path, b"{}")
    assert "\x1b" not in str(caught.value)
    assert "\\x1b[2Jreport.json" in str(caught.value)


DISK_FULL = """
import resource, sys
from pathlib import Path
from ruledrift.errors import ReportError
from ruledrift.boundary.files import path_length_problem, report_path_problem, write_atomic
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (1000, hard))
try:
    write_atomic(Path(sys.argv[1]), b"x" * 100_000)
except ReportError as error:
    print(error)
    raise SystemExit(error.exit_code)
finally:  # the disk is "full" for the write only (coverage.py, when it measures, saves at exit)
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
"""


@pytest.mark.process
@pytest.mark.skipif(os.name != "posix", reason="RLIMIT_FSIZE")
def test_a_full_disk_is_a_report_error_naming_the_path(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_bytes(b"old")
    done = subprocess.run(
        [sys.executable, "-c", DISK_FULL, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert done.stdout == f"cannot write report {path}: File too large\n"
    assert "Traceback" not in done.stderr
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["report.json"]
