"""A stand-in for `gh` and `docker` (by the name it is called under) for running the release
workflow's publish steps here: the parts of GitHub's REST API (git data, refs, contents,
releases) and of `docker buildx imagetools` that those steps use, kept in a JSON file named by
$FAKE_GITHUB_STATE. Each call is appended to the state's `calls`.

State: `objects` (sha -> blob, tree or commit), `refs` (refs/tags/NAME -> commit sha),
`images` (NAME:TAG -> digest), `releases` (tag -> arguments). Unknown calls exit 2.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any


def state_file() -> Path:
    return Path(os.environ["FAKE_GITHUB_STATE"])


def load() -> dict[str, Any]:
    return dict(json.loads(state_file().read_text(encoding="utf-8")))


def save(state: dict[str, Any]) -> None:
    state_file().write_text(json.dumps(state, indent=1), encoding="utf-8")


def object_id(kind: str, body: Any) -> str:
    return hashlib.sha1(f"{kind}:{json.dumps(body, sort_keys=True)}".encode()).hexdigest()


def store(state: dict[str, Any], kind: str, body: dict[str, Any]) -> str:
    """Blobs and trees are named by their content; a commit is new every time (as on GitHub,
    where its date differs)."""
    sha = object_id(kind, [body, len(state["objects"])] if kind == "commit" else body)
    state["objects"][sha] = {"kind": kind, **body}
    return sha


def resolve(state: dict[str, Any], ref: str) -> str | None:
    """A commit sha from a sha or a tag name."""
    if ref in state["objects"]:
        return ref
    found = state["refs"].get(f"refs/tags/{ref}")
    return None if found is None else str(found)


def jq(value: Any, expression: str) -> str:
    if expression == ".[].ref":
        return "".join(f"{item['ref']}\n" for item in value)
    for key in expression.strip(".").split("."):
        value = value[key]
    return f"{value}\n"


def api(state: dict[str, Any], args: list[str]) -> tuple[int, Any]:
    method, path = "", ""
    fields: dict[str, Any] = {}
    given: Any = None
    rest = iter(args)
    for arg in rest:
        if arg == "--method":
            method = next(rest)
        elif arg in ("-f", "-F"):
            key, _, value = next(rest).partition("=")
            fields[key] = value
        elif arg == "--input":
            assert next(rest) == "-"
            given = json.loads(sys.stdin.read())
        elif arg == "--jq":
            next(rest)
        elif arg in ("--silent", "--paginate"):
            continue
        else:
            path = arg
    method = method or ("POST" if fields or given is not None else "GET")  # as gh does
    parts = path.split("?")[0].split("/")[3:]  # after repos/OWNER/REPO
    query = dict(p.split("=", 1) for p in path.partition("?")[2].split("&") if p)
    objects, refs = state["objects"], state["refs"]
    if method == "POST" and given is not None:
        fields = given
    match method, parts:
        case "GET", ["contents", name]:
            commit = resolve(state, query["ref"])
            if commit is None:
                return 404, None
            blob = objects[objects[commit]["tree"]]["files"][name]
            return 200, {"content": "\n".join(_chunks(objects[blob]["content"]))}
        case "GET", ["commits", ref]:
            commit = resolve(state, ref)
            return (200, {"sha": commit}) if commit else (404, None)
        case "GET", ["git", "commits", sha] if sha in objects:
            return 200, {"sha": sha, "tree": {"sha": objects[sha]["tree"]}}
        case "POST", ["git", "blobs"]:
            assert fields["encoding"] == "base64"
            return 201, {"sha": store(state, "blob", {"content": fields["content"]})}
        case "POST", ["git", "trees"]:
            files = dict(objects[fields["base_tree"]]["files"])
            files.update({entry["path"]: entry["sha"] for entry in fields["tree"]})
            return 201, {"sha": store(state, "tree", {"files": files})}
        case "POST", ["git", "commits"]:
            body = {k: fields[k] for k in ("message", "tree", "parents")}
            return 201, {"sha": store(state, "commit", body)}
        case "GET", ["git", "ref", "tags", name]:
            return (200, {}) if f"refs/tags/{name}" in refs else (404, None)
        case "GET", ["git", "matching-refs", "tags", prefix]:
            return 200, [{"ref": r} for r in sorted(refs) if r.startswith(f"refs/tags/{prefix}")]
        case "POST", ["git", "refs"]:
            if fields["ref"] in refs:
                return 422, None
            refs[fields["ref"]] = fields["sha"]
            return 201, {}
        case "PATCH", ["git", "refs", "tags", name] if f"refs/tags/{name}" in refs:
            refs[f"refs/tags/{name}"] = fields["sha"]
            return 200, {}
    raise SystemExit(f"fake gh: no such call: {method} {path}")


def _chunks(text: str) -> list[str]:
    return [text[i : i + 60] for i in range(0, len(text), 60)]


def gh(state: dict[str, Any], args: list[str]) -> int:
    if args[:2] == ["release", "view"]:
        return 0 if args[2] in state["releases"] else 1
    if args[:2] == ["release", "create"]:
        state["releases"][args[2]] = args[3:]
        return 0
    if args[0] != "api":
        raise SystemExit(f"fake gh: no such command: {args}")
    status, body = api(state, args[1:])
    if status >= 400:
        print(f"gh: HTTP {status}", file=sys.stderr)
        return 1
    if "--jq" in args and body is not None:
        sys.stdout.write(jq(body, args[args.index("--jq") + 1]))
    elif "--silent" not in args:
        print(json.dumps(body))
    return 0


def docker(state: dict[str, Any], args: list[str]) -> int:
    images = state["images"]
    match args:
        case ["buildx", "imagetools", "inspect", name, *_]:
            if name not in images:
                print(f"ERROR: {name}: not found", file=sys.stderr)
                return 1
            print(json.dumps({"digest": images[name]}))
            return 0
        case ["buildx", "imagetools", "create", "--tag", name, source]:
            images[name] = source.split("@", 1)[1]
            return 0
    raise SystemExit(f"fake docker: no such command: {args}")


def main() -> int:
    state = load()
    args = sys.argv[1:]
    state["calls"].append([os.path.basename(sys.argv[0]), *args])
    program = gh if os.path.basename(sys.argv[0]) == "gh" else docker
    try:
        return program(state, args)
    finally:
        save(state)


def content_of(state: dict[str, Any], commit: str, name: str) -> str:
    """A file of a commit in the state, as text (for the tests)."""
    tree = state["objects"][state["objects"][commit]["tree"]]
    return base64.b64decode(state["objects"][tree["files"][name]]["content"]).decode()


if __name__ == "__main__":
    sys.exit(main())
