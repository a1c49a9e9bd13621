"""Session evidence under ``runs/<run>/legs/``: copied without following the agent's
symlinks, redacted of every known secret (raw and JSON-escaped)."""

from __future__ import annotations

from pathlib import Path

from outerloop.harness.base import SessionResult
from outerloop.harness.evidence import save_evidence


def test_transcript_copy_refuses_a_symlink_and_redacts_when_the_agent_plants_one(
        tmp_path: Path) -> None:
    secret_file = tmp_path / "operator-secret"
    secret_file.write_text("NOT-IN-KEYS-but-private\n")
    planted = tmp_path / "home" / ".scripted" / "s.jsonl"
    planted.parent.mkdir(parents=True)
    planted.symlink_to(secret_file)
    legs = tmp_path / "legs"
    save_evidence(legs, 1, SessionResult(stop_reason="end_turn", transcript_path=str(planted)),
                  [])
    assert not (legs / "001-transcript.jsonl").exists()
    assert "transcript_error" in (legs / "001-session.json").read_text()
    planted.unlink()
    planted.write_text('{"out": "key SECRETvalue0123 and \\"quoted\\nline\\""}\n')
    save_evidence(legs, 2, SessionResult(stop_reason="end_turn", transcript_path=str(planted)),
                  ["SECRETvalue0123", "quoted\nline"])
    copy = (legs / "002-transcript.jsonl").read_text()
    assert "SECRETvalue0123" not in copy and "quoted\\nline" not in copy
    assert copy.count("[REDACTED]") == 2
