"""A review finding: what the tamper check or a judge of the panel found in a candidate.

One shape for both, so the PR's Review section, the ledger and the draft decision treat
them alike: ``severity`` (``blocking`` makes the PR a draft; every tamper finding is
blocking), where (``file``, ``line``; empty when the finding is about the run as a
whole), a one-line ``summary`` and an optional ``detail``. ``source`` names who found
it (``tamper check`` or ``judge-N``); a judge's words are untrusted text.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from outerloop.ledger.events import ReviewFinding, Severity

MAX_SUMMARY_CHARS = 300
MAX_DETAIL_CHARS = 2_000
MAX_FILE_CHARS = 300

TAMPER_SOURCE = "tamper check"


class Finding(BaseModel):
    """One finding, validated (a judge's file is read through this model)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    severity: Severity
    file: str = Field(default="", max_length=MAX_FILE_CHARS)
    line: int | None = Field(default=None, ge=0)
    summary: str = Field(min_length=1, max_length=MAX_SUMMARY_CHARS)
    detail: str = Field(default="", max_length=MAX_DETAIL_CHARS)
    source: str = Field(default="", max_length=40)

    def as_recorded(self) -> ReviewFinding:
        """This finding as ``publish_ready`` records it (the same fields, in order)."""
        return ReviewFinding(severity=self.severity, file=self.file, line=self.line,
                             summary=self.summary, detail=self.detail, source=self.source)

    @property
    def blocking(self) -> bool:
        return self.severity == "blocking"

    @property
    def where(self) -> str:
        """``file:line``, ``file``, or empty."""
        if not self.file:
            return ""
        return f"{self.file}:{self.line}" if self.line else self.file
