"""The pull progress printer: bars on a TTY, plain lines elsewhere, driven by a fake clock."""

from __future__ import annotations

import io

import pytest

from ruledrift.console.pull_progress import PullProgressPrinter, human_bytes
from ruledrift.ollama.api import PullProgress

LAYER = "sha256:6e4c38e1172f42fdbff13edf9a7a017679fb82b0fde415a3e8b3c31c6ed4a4e4"
OTHER = "sha256:f4d24e9138dd4603380add165d2b0d970bef471fac194b436ebd50e6147c6588"
GB = 1_000_000_000


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def layer(completed: int | None, total: int = GB, digest: str = LAYER) -> PullProgress:
    return PullProgress(f"pulling {digest[7:19]}", digest=digest, total=total, completed=completed)


def printer(tty: bool) -> tuple[PullProgressPrinter, io.StringIO, Clock]:
    stream, clock = io.StringIO(), Clock()
    return PullProgressPrinter(stream, tty, clock=clock), stream, clock


# --- plain lines (not a TTY) --------------------------------------------------------------------


def test_plain_output_has_a_line_per_status_and_per_ten_percent() -> None:
    show, stream, clock = printer(tty=False)
    show(PullProgress("pulling manifest"))
    for completed in (None, *range(0, GB + 1, GB // 100)):  # 1 % steps, 0.05 s apart
        show(layer(completed))
        clock.now += 0.05
    for status in ("verifying sha256 digest", "writing manifest", "success"):
        show(PullProgress(status))
    show.close()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "pulling manifest"
    assert lines[1] == "pulling 6e4c38e1172f   0% 0 B/1.0 GB"
    assert lines[2] == "pulling 6e4c38e1172f  10% 100.0 MB/1.0 GB"
    assert lines[11] == "pulling 6e4c38e1172f 100% 1.0 GB/1.0 GB"
    assert lines[12:] == ["verifying sha256 digest", "writing manifest", "success"]
    assert "\x1b" not in stream.getvalue()
    assert "\r" not in stream.getvalue()


def test_plain_output_repeats_a_slow_layer_every_five_seconds() -> None:
    show, stream, clock = printer(tty=False)
    for _ in range(25):  # 12 s in the same 10 % band
        show(layer(GB // 20))
        clock.now += 0.5
    assert stream.getvalue().count("5%") == 3  # at 0 s, 5 s and 10 s


def test_plain_output_prints_a_finished_layer_once() -> None:
    show, stream, clock = printer(tty=False)
    for _ in range(3):
        show(layer(GB))
        clock.now += 10
    assert stream.getvalue() == "pulling 6e4c38e1172f 100% 1.0 GB/1.0 GB\n"


def test_a_repeated_status_is_printed_once() -> None:
    show, stream, _ = printer(tty=False)
    for status in ("pulling manifest", "pulling manifest", "success", "success"):
        show(PullProgress(status))
    assert stream.getvalue() == "pulling manifest\nsuccess\n"


@pytest.mark.parametrize("tty", [False, True])
def test_control_characters_from_the_server_are_escaped(tty: bool) -> None:
    show, stream, _ = printer(tty)
    show(PullProgress("pulling \x1b[31mred\x1b[0m"))
    assert stream.getvalue() == "pulling \\x1b[31mred\\x1b[0m\n"


# --- bars (a TTY) -------------------------------------------------------------------------------


def test_a_tty_bar_is_redrawn_in_place_at_most_ten_times_a_second() -> None:
    show, stream, clock = printer(tty=True)
    for completed in range(0, GB + 1, GB // 1000):  # 1001 events in 1 s
        show(layer(completed))
        clock.now += 0.001
    show(PullProgress("verifying sha256 digest"))
    output = stream.getvalue()
    draws = output.split("\r\x1b[2K")[1:]
    assert 10 <= len(draws) <= 12  # ten a second, and the final state when the line ends
    assert draws[0] == "pulling 6e4c38e1172f   0% ▕░░░░░░░░░░░░░░░░░░░░░░░░▏ 0 B/1.0 GB"
    last, status = draws[-1].split("\n")[:2]
    assert last == "pulling 6e4c38e1172f 100% ▕████████████████████████▏ 1.0 GB/1.0 GB"
    assert status == "verifying sha256 digest"
    assert output.endswith("\nverifying sha256 digest\n")


def test_each_layer_gets_its_own_bar_line() -> None:
    show, stream, clock = printer(tty=True)
    show(layer(GB // 2))
    clock.now += 1
    show(layer(500, total=1000, digest=OTHER))
    show.close()
    half = "▕████████████░░░░░░░░░░░░▏"
    lines = stream.getvalue().split("\n")
    assert lines[0] == f"\r\x1b[2Kpulling 6e4c38e1172f  50% {half} 500.0 MB/1.0 GB"
    assert lines[1] == f"\r\x1b[2Kpulling f4d24e9138dd  50% {half} 500 B/1.0 KB"
    assert lines[2] == ""  # close() ends the open line


def test_close_without_an_open_bar_writes_nothing() -> None:
    show, stream, _ = printer(tty=True)
    show(PullProgress("success"))
    show.close()
    show.close()
    assert stream.getvalue() == "success\n"


def test_odd_numbers_from_the_server_stay_in_range() -> None:
    show, stream, _ = printer(tty=True)
    show(layer(3 * GB))  # more than the total
    show(layer(-5, digest=OTHER))
    show(PullProgress("pulling x", digest=LAYER, total=0, completed=5))  # no size: a status
    show.close()
    lines = stream.getvalue().split("\n")
    assert lines[0].endswith("100% ▕████████████████████████▏ 1.0 GB/1.0 GB")
    assert lines[1].endswith("  0% ▕░░░░░░░░░░░░░░░░░░░░░░░░▏ 0 B/1.0 GB")
    assert lines[2] == "pulling x"


@pytest.mark.parametrize(
    ("count", "text"),
    [(0, "0 B"), (999, "999 B"), (1000, "1.0 KB"), (1_234_567, "1.2 MB"), (GB * 2600, "2.6 TB")],
)
def test_sizes_are_in_decimal_units(count: int, text: str) -> None:
    assert human_bytes(count) == text
