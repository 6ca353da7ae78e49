"""The one place where exceptions become exit codes and messages (the CLI and the GitHub Action
both go through `guarded`), and SIGTERM as an interruption (`interruptible`)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator

from ruledrift import __version__
from ruledrift.errors import ArgumentsExit, ExitCode, RuleDriftError

ISSUES_URL = "https://github.com/ruledrift/action/issues"


def guarded(command: Callable[[], int]) -> int:
    """Run `command`; the one place where exceptions become exit codes and messages."""
    try:
        return command()
    except ArgumentsExit as done:
        return done.status
    except RuleDriftError as error:
        from ruledrift.console import commands  # imported late: `--help` stays fast

        commands.show_failure(error, os.environ)
        return int(error.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("ruledrift: interrupted\n")
        return int(ExitCode.INTERRUPTED)
    except Exception:  # noqa: BLE001 - the one place a bug becomes exit code 4, with its traceback
        traceback.print_exc()
        sys.stderr.write(
            f"ruledrift {__version__}: internal error. This is a bug in RuleDrift; please report "
            f"it with the traceback above at {ISSUES_URL}\n"
        )
        return int(ExitCode.INTERNAL)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """For the whole command, SIGTERM (a cancelled CI job, `docker stop`) interrupts like
    Ctrl-C: `guarded` turns it into exit 130, and no temporary file is left behind."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
