"""Giving files back: only inside the workspace, with symbolic links followed before deciding,
and never a traceback for a path the file system refuses."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ruledrift.action.files import created_root, give_back

OWNER = (12345, 23456)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return workspace


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    return outside


def owner(path: Path) -> tuple[int, int]:
    found = path.lstat()
    return found.st_uid, found.st_gid


needs_root = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root (as the action)"
)


def test_a_symlinked_folder_leading_out_of_the_workspace_owns_nothing(
    workspace: Path, outside: Path
) -> None:
    (workspace / "reports").symlink_to(outside)
    assert created_root(workspace / "reports" / "r.json", workspace) is None
    assert created_root(workspace / "reports" / "new" / "deep" / "r.json", workspace) is None
    (outside / "r.json").write_bytes(b"{}")
    assert created_root(workspace / "reports" / "r.json", workspace) is None


def test_a_symlinked_file_leading_out_of_the_workspace_owns_nothing(
    workspace: Path, outside: Path
) -> None:
    (outside / "r.json").write_bytes(b"{}")
    (workspace / "r.json").symlink_to(outside / "r.json")
    assert created_root(workspace / "r.json", workspace) is None


def test_a_symlink_inside_the_workspace_owns_its_real_path(workspace: Path) -> None:
    (workspace / "real").mkdir()
    (workspace / "reports").symlink_to(workspace / "real")
    assert created_root(workspace / "reports" / "new" / "r.json", workspace) == (
        workspace / "real" / "new"
    )


def test_a_symlinked_workspace_is_followed_too(tmp_path: Path, workspace: Path) -> None:
    (tmp_path / "link").symlink_to(workspace)
    assert created_root(tmp_path / "link" / "out" / "r.json", tmp_path / "link") == (
        workspace / "out"
    )


def test_an_over_long_path_raises_nothing(workspace: Path) -> None:
    """Nothing is created there (the inputs refuse it), so what it owns is never given back."""
    long_name = workspace / ("x" * 300) / "r.json"
    assert created_root(long_name, workspace) == workspace / ("x" * 300)
    created_root(workspace.joinpath(*["d" * 200] * 30), workspace)
    give_back([workspace / ("x" * 300)], workspace)


@needs_root
def test_nothing_outside_the_workspace_is_chowned_through_a_symlinked_folder(
    workspace: Path, outside: Path
) -> None:
    """The root found before the run is inside; the run then swaps its folder for a link."""
    os.chown(workspace, *OWNER)
    (workspace / "out").mkdir()
    root = created_root(workspace / "out" / "new" / "r.json", workspace)
    assert root == workspace / "out" / "new"
    (workspace / "out").rmdir()
    (workspace / "out").symlink_to(outside)
    (outside / "new").mkdir()
    (outside / "new" / "r.json").write_bytes(b"{}")
    give_back([root], workspace)
    assert owner(outside / "new") == (0, 0)
    assert owner(outside / "new" / "r.json") == (0, 0)


@needs_root
def test_a_link_found_inside_a_given_back_folder_is_not_followed(
    workspace: Path, outside: Path
) -> None:
    os.chown(workspace, *OWNER)
    (outside / "secret").write_bytes(b"")
    (workspace / "models").mkdir()
    (workspace / "models" / "file").write_bytes(b"")
    (workspace / "models" / "link").symlink_to(outside)
    give_back([workspace / "models"], workspace)
    assert owner(workspace / "models") == OWNER
    assert owner(workspace / "models" / "file") == OWNER
    assert owner(workspace / "models" / "link") == OWNER  # the link itself, inside
    assert owner(outside) == (0, 0)
    assert owner(outside / "secret") == (0, 0)


@needs_root
def test_files_inside_are_given_back(workspace: Path) -> None:
    os.chown(workspace, *OWNER)
    root = created_root(workspace / "a" / "b" / "r.json", workspace)
    assert root is not None
    (workspace / "a" / "b").mkdir(parents=True)
    (workspace / "a" / "b" / "r.json").write_bytes(b"{}")
    give_back([root], workspace)
    assert {owner(p) for p in [root, *root.rglob("*")]} == {OWNER}


@needs_root
def test_a_root_outside_the_workspace_planned_before_the_run_is_given_back(
    tmp_path: Path, workspace: Path
) -> None:
    """`ollama serve` creates ~/.ollama: planned inside HOME, given back like the reports."""
    os.chown(workspace, *OWNER)
    home = tmp_path / "home"
    home.mkdir()
    root = created_root(home / ".ollama", home)
    assert root == home / ".ollama"
    (home / ".ollama").mkdir()
    (home / ".ollama" / "id_ed25519").write_bytes(b"")
    give_back([root], workspace)
    assert owner(home / ".ollama") == OWNER
    assert owner(home / ".ollama" / "id_ed25519") == OWNER
