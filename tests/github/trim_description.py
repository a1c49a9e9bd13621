"""Regenerate ``api.github.com.trimmed.json`` from GitHub's official REST description.

The description comes from the npm package ``@octokit/openapi`` (MIT licence), pinned
to the version in ``OCTOKIT_OPENAPI_VERSION`` beside this file. CI never downloads the
385 MB package: the trimmed copy (only the operations outerloop calls, plus every
component they reference) is committed, so refreshing it is a deliberate change:

    cd "$(mktemp -d)" && npm install @octokit/openapi@"$(cat OCTOKIT_OPENAPI_VERSION)"
    python tests/github/trim_description.py node_modules/@octokit/openapi

Operations kept are listed in ``OPERATIONS``; add one there when the forge (or the
fake) starts using a new endpoint. A listed operation missing from the description
fails loudly rather than silently narrowing the check.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "api.github.com.trimmed.json"
VERSION_FILE = HERE / "OCTOKIT_OPENAPI_VERSION"

OPERATIONS: dict[str, tuple[str, ...]] = {
    "/rate_limit": ("get",),
    "/user": ("get",),
    "/app/installations/{installation_id}/access_tokens": ("post",),
    "/repos/{owner}/{repo}": ("get",),
    "/repos/{owner}/{repo}/installation": ("get",),
    "/repos/{owner}/{repo}/branches/{branch}": ("get",),
    "/repos/{owner}/{repo}/git/ref/{ref}": ("get",),
    "/repos/{owner}/{repo}/contents/{path}": ("get",),
    "/repos/{owner}/{repo}/collaborators/{username}/permission": ("get",),
    "/repos/{owner}/{repo}/labels": ("get", "post"),
    "/repos/{owner}/{repo}/issues": ("get", "post"),
    "/repos/{owner}/{repo}/issues/{issue_number}": ("get", "patch"),
    "/repos/{owner}/{repo}/issues/{issue_number}/comments": ("get", "post"),
    "/repos/{owner}/{repo}/issues/comments/{comment_id}": ("patch",),
    "/repos/{owner}/{repo}/issues/{issue_number}/labels": ("get", "post", "put"),
    "/repos/{owner}/{repo}/issues/{issue_number}/timeline": ("get",),
    "/repos/{owner}/{repo}/pulls": ("get", "post"),
    "/repos/{owner}/{repo}/pulls/{pull_number}": ("get", "patch"),
    "/repos/{owner}/{repo}/pulls/{pull_number}/merge": ("put",),
    "/repos/{owner}/{repo}/pulls/{pull_number}/reviews": ("get", "post"),
    "/repos/{owner}/{repo}/pulls/{pull_number}/comments": ("get",),
}


def _refs(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/"):
            found.add(ref)
        for value in node.values():
            _refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found)


def trim(spec: dict[str, Any]) -> dict[str, Any]:
    """The description narrowed to ``OPERATIONS`` and the components they reach."""
    paths: dict[str, Any] = {}
    for path, methods in OPERATIONS.items():
        item = spec["paths"].get(path)
        if item is None:
            raise SystemExit(f"{path} is not in the description; fix OPERATIONS")
        kept = {m: item[m] for m in methods if m in item}
        missing = set(methods) - set(kept)
        if missing:
            raise SystemExit(f"{path} has no {sorted(missing)}; fix OPERATIONS")
        if "parameters" in item:
            kept["parameters"] = item["parameters"]
        paths[path] = kept
    components: dict[str, dict[str, Any]] = {}
    pending: set[str] = set()
    _refs(paths, pending)
    seen: set[str] = set()
    while pending:
        ref = pending.pop()
        if ref in seen:
            continue
        seen.add(ref)
        _, _, section, name = ref.split("/", 3)
        node = spec["components"][section][name.replace("~1", "/").replace("~0", "~")]
        components.setdefault(section, {})[name] = node
        _refs(node, pending)
    out = {k: spec[k] for k in ("openapi", "info", "servers") if k in spec}
    out["paths"] = paths
    out["components"] = {s: dict(sorted(v.items())) for s, v in sorted(components.items())}
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    package = Path(argv[1])
    meta = json.loads((package / "package.json").read_text())
    pinned = VERSION_FILE.read_text().strip()
    if meta["version"] != pinned:
        raise SystemExit(f"package is {meta['version']}, pinned {pinned}; fix: install "
                         f"@octokit/openapi@{pinned} or change {VERSION_FILE.name}")
    spec = json.loads((package / "generated" / "api.github.com.json").read_text())
    OUTPUT.write_text(json.dumps(trim(spec), indent=1, sort_keys=False) + "\n")
    print(f"wrote {OUTPUT} from @octokit/openapi {pinned}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
