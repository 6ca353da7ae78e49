"""write_atomic: whole files or none, no temporary files left, errors that name the path."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from ruledrift.errors import ExitCode, ReportError
from ruledrift.reports.files import write_atomic


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
