"""scripts/release/changelog.py: a version's section of a Keep a Changelog file, and the
repository's own CHANGELOG.md."""

from __future__ import annotations

from pathlib import Path

import pytest

import ruledrift
from scripts.release.changelog import ChangelogError, main, section

ROOT = Path(__file__).resolve().parents[2]
CHANGELOG = """# Changelog

Intro text.

## [Unreleased]

### Added

- Not released yet.

## [1.1.0] - 2026-12-24

### Fixed

- A bug.

## [1.0.0] - 2026-11-30

### Added

- Everything.

[Unreleased]: https://github.com/ruledrift/action/compare/v1.1.0...HEAD
[1.1.0]: https://github.com/ruledrift/action/compare/v1.0.0...v1.1.0
[1.0.0]: https://github.com/ruledrift/action/releases/tag/v1.0.0
"""


def test_a_section_ends_at_the_next_heading() -> None:
    assert section(CHANGELOG, "1.1.0") == "### Fixed\n\n- A bug.\n"


def test_the_last_section_leaves_out_the_link_definitions() -> None:
    assert section(CHANGELOG, "1.0.0") == "### Added\n\n- Everything.\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (CHANGELOG, "no '## [1.2.0] - YYYY-MM-DD' section"),
        (CHANGELOG.replace("## [1.1.0] - 2026-12-24", "## [1.2.0]"), "needs a date"),
        ("## [1.2.0] - 2026-12-24\n\n## [1.1.0] - 2026-12-01\n", "is empty"),
        ("## [1.2.0] - 2026-12-24\n\n[1.2.0]: https://example.org\n", "is empty"),
    ],
)
def test_a_missing_undated_or_empty_section_is_refused(text: str, message: str) -> None:
    with pytest.raises(ChangelogError, match=message.replace("[", r"\[").replace("]", r"\]")):
        section(text, "1.2.0")


def test_unreleased_is_not_a_version_with_notes() -> None:
    with pytest.raises(ChangelogError, match="needs a date"):
        section(CHANGELOG, "Unreleased")


def test_main_prints_the_notes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "CHANGELOG.md"
    path.write_text(CHANGELOG, encoding="utf-8")
    assert main(["1.1.0", "--file", str(path)]) == 0
    assert capsys.readouterr().out == "### Fixed\n\n- A bug.\n"
    assert main(["9.9.9", "--file", str(path)]) == 1
    assert "no '## [9.9.9]" in capsys.readouterr().err


def test_the_repository_changelog_has_the_package_version() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## [Unreleased]" in text
    assert "keepachangelog.com/en/1.1.0" in text
    assert section(text, ruledrift.__version__).strip()
    assert f"[{ruledrift.__version__}]: https://github.com/ruledrift/action/" in text
