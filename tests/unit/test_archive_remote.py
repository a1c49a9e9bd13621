"""The archive remote: keys from a 0600 file into rclone's environment only."""

from __future__ import annotations

from pathlib import Path

import pytest

from outerloop.archive.remote import remote_of
from outerloop.archive.spec import archive_spec
from outerloop.compute.base import spec_to_json
from outerloop.config import ArchiveSettings, Settings
from outerloop.errors import ConfigError


def _settings(home: Path, **archive: object) -> Settings:
    fields: dict[str, object] = {"to": "s3://bucket/pfx", "endpoint": "http://127.0.0.1:9"}
    fields.update(archive)
    return Settings(home=home, archive=ArchiveSettings.model_validate(fields))


def _keys(home: Path, text: str, mode: int = 0o600) -> None:
    path = home / "keys" / "archive"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def test_keys_reach_rclone_only_through_its_environment_when_configured(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "inherited-secret")
    monkeypatch.setenv("RCLONE_CONFIG_ARC_ENDPOINT", "http://evil")
    _keys(tmp_path, "# archive keys\naws_access_key_id = AKIA1\nsecret_access_key = 's3cr3t'\n")
    remote = remote_of(_settings(tmp_path))
    assert remote.root == "arc:bucket/pfx" and remote.bucket == "arc:bucket"
    assert remote.env["RCLONE_CONFIG_ARC_SECRET_ACCESS_KEY"] == "s3cr3t"
    assert remote.env["RCLONE_CONFIG_ARC_ACCESS_KEY_ID"] == "AKIA1"
    assert remote.env["RCLONE_CONFIG_ARC_ENDPOINT"] == "http://127.0.0.1:9"
    assert remote.env["RCLONE_CONFIG_ARC_PROVIDER"] == "Other"
    assert "AWS_SECRET_ACCESS_KEY" not in remote.env
    assert "s3cr3t" in remote.secrets and "s3cr3t" not in repr(remote)
    assert remote.run_path("o/n", "r1") == "arc:bucket/pfx/o__n/r1"
    assert remote.run_where("o/n", "r1") == "s3://bucket/pfx/o__n/r1/"
    spec = archive_spec(_settings(tmp_path), "o/n", "r1", 1)
    assert b"s3cr3t" not in spec_to_json(spec)


def test_a_key_file_others_can_read_is_refused_with_the_fix_when_loaded(tmp_path: Path) -> None:
    _keys(tmp_path, "access_key_id = a\nsecret_access_key = b\n", mode=0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        remote_of(_settings(tmp_path))


def test_a_key_file_without_the_secret_is_refused_naming_it_when_loaded(tmp_path: Path) -> None:
    _keys(tmp_path, "access_key_id = a\n")
    with pytest.raises(ConfigError, match="lacks secret_access_key"):
        remote_of(_settings(tmp_path))
    _keys(tmp_path, "password = a\n")
    with pytest.raises(ConfigError, match="line 1"):
        remote_of(_settings(tmp_path))


def test_an_rclone_remote_needs_its_private_config_when_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="rclone_config"):
        remote_of(_settings(tmp_path, to="mybox:runs"))
    conf = tmp_path / "keys" / "rclone.conf"
    conf.parent.mkdir()
    conf.write_text("[mybox]\ntype = local\n")
    conf.chmod(0o600)
    remote = remote_of(_settings(tmp_path, to="mybox:runs", rclone_config="keys/rclone.conf"))
    assert remote.root == "mybox:runs" and remote.env["RCLONE_CONFIG"] == str(conf)
    assert remote.bucket is None


def test_pack_redacts_every_secret_when_one_straddles_a_chunk_boundary(tmp_path: Path) -> None:
    import json
    import tarfile

    from outerloop.archive import pack as packing

    home = tmp_path / "home"
    run = home / "runs" / "r1"
    (run / "legs").mkdir(parents=True)
    secret = "SECRETvalue-0123456789"
    big = b"x" * (packing.CHUNK - 5) + secret.encode() + b"y" * 100 + secret.encode()
    (run / "legs" / "big.bin").write_bytes(big)
    (run / "clean.txt").write_text("nothing here\n")
    (run / f"named-{secret}.txt").write_text("ok\n")
    packed = packing.pack(home, "r1", "demo/t", tmp_path / "staging", [secret])
    with tarfile.open(packed.tarball, "r:gz") as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isreg()}
    assert all(secret.encode() not in data and secret not in name
               for name, data in members.items())
    assert members["runs/r1/legs/big.bin"] == big.replace(secret.encode(), b"[REDACTED]")
    assert members["runs/r1/clean.txt"] == b"nothing here\n"
    manifest = json.loads(packed.manifest.read_text())
    marked = {e["path"] for e in manifest["files"] if e.get("redacted")}
    assert marked == {"runs/r1/legs/big.bin"} == set(packed.redacted)
    assert not (tmp_path / "staging" / ".redacted").exists()
