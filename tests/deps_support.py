"""A target that needs a package, and a tiny local index that holds it (no network).

The package is built into a wheel here, by hand (``zipfile``): the test machine has no
build backend that works offline (setuptools without ``wheel``), and a wheel is a zip
of the package plus its ``.dist-info``. The index is a plain directory the tick host's
pip reads with ``--no-index --find-links`` (``[deps] pip_args``); it is outside every
sandbox grant, so no job can reach it.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

from tests.support import in_process_target

PACKAGE = "oldep_probe"
DIST = "oldep-probe"
VALUE = 7
LOCK = "requirements.lock"


def build_wheel(index: Path, name: str = PACKAGE, version: str = "1.0",
                source: str = f"VALUE = {VALUE}\n") -> Path:
    """A pure-Python wheel of package ``name`` (one ``__init__.py``) in ``index``."""
    index.mkdir(parents=True, exist_ok=True)
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": source,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\n"
                            f"Version: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
                         "Tag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest())
        record.append(f"{path},sha256={digest.rstrip(b'=').decode()},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = "\n".join(record) + "\n"
    wheel = index / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def dep_target(tmp_path: Path, index: Path, lock: str = f"{DIST}==1.0\n") -> Path:
    """tinytsp whose evaluator imports ``oldep_probe`` and reports, in its JSON line,
    the package's value and file and whether it can see ``index``; its contract names
    the lock."""
    target = in_process_target(tmp_path / "target")  # the evaluator prints the metric
    evaluate = target / "evaluate.py"
    text = evaluate.read_text()
    text = text.replace("from solver import solve\n",
                        f"import {PACKAGE}\nfrom solver import solve\n", 1)
    old = "    print(result_line(args.bench, mean, args.json))\n"
    assert old in text
    text = text.replace(old, (
        "    import json, os\n"
        "    metric, _ = BENCHES[args.bench]\n"
        f'    print(json.dumps({{metric: mean, "instances": INSTANCES, '
        f'"dep": {PACKAGE}.VALUE, "dep_file": {PACKAGE}.__file__, '
        f'"index_visible": os.path.exists({str(index)!r})}}))\n'))
    evaluate.write_text(text)
    (target / LOCK).write_text(lock)
    contract = target / ".outerloop.yaml"
    contract.write_text(contract.read_text() + f"dependencies:\n  requirements: {LOCK}\n")
    return target


def pip_from(index: Path) -> str:
    """The ``[deps]`` section reading packages only from ``index``."""
    return f'[deps]\npip_args = ["--no-index", "--find-links", "{index}"]\n'


def tree_digest(root: Path) -> str:
    """Every path, mode and byte under ``root``: equal digests, nothing changed."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if "__pycache__" in path.parts:
            continue
        info = path.lstat()
        digest.update(f"{path.relative_to(root)}:{info.st_mode:o}\n".encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()
