"""The agent: its CLI, its model key, its endpoint from here and from a compute node."""

from __future__ import annotations

import shlex
import sys
import time
import urllib.error
import urllib.request

from outerloop.compute.base import JobSpec
from outerloop.config import Settings
from outerloop.doctor.base import Check, fail, ok
from outerloop.errors import ConfigError, OuterloopError
from outerloop.kinds import MODEL_CLIS, ModelHarnessKind, names
from outerloop.private_files import read_key

PROBE_TIMEOUT_S = 10
COMPUTE_PROBE_WAIT_S = 180
PROBE = """\
import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(sys.argv[1], timeout=10)
    print("answered")
except urllib.error.HTTPError as exc:
    print("answered", exc.code)
except Exception as exc:
    print("no answer:", getattr(exc, "reason", exc))
"""


def check_harness_binary(settings: Settings) -> list[Check]:
    kind = settings.harness.kind
    if kind == "scripted":
        script = settings.harness.script
        if not script:
            return [fail("harness (scripted)", "no script set",
                         "set [harness] script to a YAML script (docs/scripted-agent.md), "
                         f"or choose --harness {'|'.join(names(ModelHarnessKind))}")]
        path = settings.path(script)
        if not path.is_file():
            return [fail("harness (scripted)", f"script {path} missing",
                         "set [harness] script to a YAML script (docs/scripted-agent.md)")]
        return [ok("harness (scripted)", f"script {path}")]
    from outerloop.harness.agent_cli import binary_version

    cli = MODEL_CLIS[kind]
    binary = settings.harness.binary or cli.binary
    try:
        version = binary_version(binary)
    except ConfigError as exc:
        return [fail(f"harness ({kind}) binary", str(exc).split("; fix:")[0],
                     f"npm install -g {cli.package} or set [harness] binary to its path")]
    return [ok(f"harness ({kind}) binary", f"{binary}: {version}")]


def check_model_key(settings: Settings) -> list[Check]:
    if settings.harness.kind == "scripted":
        return [ok("model key", "not needed by the scripted agent")]
    name = settings.harness.model_key_file
    if not name:
        return [fail("model key", "[harness] model_key_file is not set",
                     "write the key to keys/model-key, chmod 600, set model_key_file")]
    try:
        read_key(settings.path(name))
    except ConfigError as exc:
        return [fail("model key", str(exc).split("; fix:")[0],
                     str(exc).split("; fix:")[-1].strip())]
    return [ok("model key", f"{settings.path(name)} (0600)")]


def endpoint_url(settings: Settings) -> str:
    kind = settings.harness.kind
    default = MODEL_CLIS[kind].endpoint if kind != "scripted" else ""
    base = (settings.harness.base_url or default).rstrip("/")
    return f"{base}/models" if base.endswith("/v1") else f"{base}/v1/models"


def check_endpoint(settings: Settings) -> list[Check]:
    """A cheap HTTP probe: any HTTP answer (even 401/404) means the endpoint is up."""
    if settings.harness.kind == "scripted":
        return [ok("model endpoint", "not needed by the scripted agent")]
    url = endpoint_url(settings)
    try:
        with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT_S) as answer:
            return [ok("model endpoint", f"{url} answered {answer.status}")]
    except urllib.error.HTTPError as exc:
        return [ok("model endpoint", f"{url} answered {exc.code}")]
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return [fail("model endpoint", f"{url} did not answer ({reason})",
                     "check the network/proxy, or set [harness] base_url to a reachable "
                     "endpoint")]


def check_endpoint_from_compute(settings: Settings) -> list[Check]:
    """Sessions run in Slurm jobs: probe the endpoint from a short session-placed job,
    with the jobs' own environment (``pass_env``, ``setup``)."""
    if settings.harness.kind == "scripted" or settings.compute.kind != "slurm":
        return []
    from outerloop.compute.jobenv import place
    from outerloop.compute.slurm import SlurmCompute

    url = endpoint_url(settings)
    folder = settings.home / "cache" / "doctor"
    command = shlex.join([sys.executable, "-c", PROBE, url])
    spec = place(JobSpec(name="outerloop-doctor-endpoint", command=command, workdir=str(folder),
                         log_dir=str(folder / "endpoint"), time_minutes=2), settings.compute,
                 "session")
    folder.mkdir(parents=True, exist_ok=True)
    (spec.log_path / "stdout").unlink(missing_ok=True)
    slurm = SlurmCompute(settings.compute)
    name = "model endpoint from a compute node"
    try:
        job = slurm.submit(spec)
        deadline = time.monotonic() + COMPUTE_PROBE_WAIT_S
        while not slurm.observe([job])[job].state.terminal:
            if time.monotonic() > deadline:
                slurm.cancel(job)
                return [fail(name, f"probe job {job} did not run within "
                             f"{COMPUTE_PROBE_WAIT_S} s (queue busy?)", "run doctor again "
                             "when the session partition is less busy")]
            time.sleep(2)
    except OuterloopError as exc:
        return [fail(name, f"the probe job could not run: {exc}", "fix [compute.session]")]
    out = (spec.log_path / "stdout")
    text = out.read_text(encoding="utf-8").strip() if out.exists() else "no output"
    if text.startswith("answered"):
        return [ok(name, f"{url} {text} (job {job})")]
    return [fail(name, f"{url}: {text} (job {job})", "compute nodes need a route to the "
                 "model API: add the proxy variables to [compute] pass_env (HTTPS_PROXY, "
                 "NO_PROXY) and the CA bundle (SSL_CERT_FILE, REQUESTS_CA_BUNDLE)")]
