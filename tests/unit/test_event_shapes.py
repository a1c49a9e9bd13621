"""The ledger's nested shapes are typed (a leg's request, the publish rows and findings,
the eval pairs, the archived files) and lines written before they were still decode,
fold and encode byte for byte as before."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from outerloop.ledger import events as ev
from outerloop.ledger.book import (
    LedgerWriter,
    archive_file,
    decode_lines,
    rebuild,
    run_file,
    tick_file,
)
from outerloop.run.findings import Finding

TARGET = "o/n"
RUN = "o__n-1"
ENVELOPE = '"v":1,"seq":7,"at":"2026-01-02T03:04:05.000006Z","lc":9,"run":"o__n-1"'
C40 = "c" * 40

# Lines as the version before these shapes were typed wrote them (dicts in the fields).
LEG_ENDED = (
    '{"kind":"leg_ended",' + ENVELOPE + ',"leg":2,"stop_reason":"end_turn","is_error":false,'
    '"session_id":"s","cost_usd":0.5,"turns":3,"progress":true,"request":{"verb":"sleep",'
    '"launches":[{"name":"a","command":"python x.py","minutes":5}],"messages":[]},'
    '"error":null}')
PARKED = (
    '{"kind":"parked",' + ENVELOPE + ',"reason":"eval","job_ids":["11","12","13","14"],'
    '"wake_job":"15","deadline":"2026-01-02T05:00:00.000000Z","seal":"' + C40 + '",'
    '"evals":[{"base":"11","cand":"12"},{"bench":"tsp-large","base":"13","cand":"14"}],'
    '"retry":false,"left_out":[]}')
PUBLISH_READY = (
    '{"kind":"publish_ready",' + ENVELOPE + ',"seal_sha":"' + C40 + '",'
    '"branch":"outerloop/o__n-1","title":"t","body":"b","report":"r","experiments":[{'
    '"sleep":1,"launch":"try-2opt","why":"try 2-opt","job":"41","ended":"completed",'
    '"elapsed":"75s","last_line":"{\\"mean_tour_length\\": 6.5}"}],"draft":true,'
    '"degraded":"","findings":[{"severity":"blocking","file":"solver/tour.py","line":21,'
    '"summary":"reads the seed","detail":"d","source":"tamper check"},{"severity":'
    '"advisory","file":"","line":null,"summary":"naming","detail":"","source":"judge-1"}]}')
ARCHIVED = (
    '{"kind":"archived",' + ENVELOPE + ',"where":"s3:bucket/o__n/o__n-1","files":[{"name":'
    '"manifest.json","size":120,"md5":"' + "0" * 32 + '"},{"name":"run.tar.zst","size":4096,'
    '"md5":"' + "f" * 32 + '"}],"local_files":12,"local_bytes":9000}')

# the store's own encoder (``LedgerWriter.append``)
_ENCODER = msgspec.json.Encoder(enc_hook=str)


def _decode(line: str) -> ev.Event | ev.UnknownEvent:
    events, bad = decode_lines([line.encode()])
    assert bad == 0 and len(events) == 1
    return events[0]


@pytest.mark.parametrize("line", [LEG_ENDED, PARKED, PUBLISH_READY, ARCHIVED],
                         ids=["leg_ended", "parked", "publish_ready", "archived"])
def test_an_old_line_reads_the_same_when_encoded_again_without_its_defaults(
        line: str) -> None:
    """Events are written without the fields at their defaults (issue 27): an old line,
    which holds every field, decodes into the values its re-encoding decodes into, and
    the re-encoding is the old line without those fields."""
    old = _decode(line)
    again = _ENCODER.encode(old)
    assert _decode(again.decode()) == old
    assert len(again) < len(line) and b'"v":1' not in again


def test_an_old_lines_nested_fields_are_read_as_attributes_when_decoded() -> None:
    leg = _decode(LEG_ENDED)
    assert isinstance(leg, ev.LegEnded) and leg.request is not None
    assert leg.request["verb"] == "sleep"
    parked = _decode(PARKED)
    assert isinstance(parked, ev.Parked)
    assert parked.evals == [ev.EvalPair(base="11", cand="12"),
                            ev.EvalPair(bench="tsp-large", base="13", cand="14")]
    ready = _decode(PUBLISH_READY)
    assert isinstance(ready, ev.PublishReady)
    assert [(r.job, r.elapsed) for r in ready.experiments] == [("41", "75s")]
    assert [(f.severity, f.line, f.source) for f in ready.findings] == [
        ("blocking", 21, "tamper check"), ("advisory", None, "judge-1")]
    archived = _decode(ARCHIVED)
    assert isinstance(archived, ev.Archived)
    assert [(f.name, f.size) for f in archived.files] == [("manifest.json", 120),
                                                          ("run.tar.zst", 4096)]


def _raw(path: Path, line: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(line + "\n")


def test_old_lines_fold_into_the_run_when_a_history_holds_them(tmp_path: Path) -> None:
    LedgerWriter(tick_file(tmp_path, TARGET)).append(ev.RunQueued(
        run=RUN, target=TARGET, benchmark="tour", agent="agent-01", issue=1))
    runs = run_file(tmp_path, TARGET, RUN)
    _raw(runs, LEG_ENDED.replace('"seq":7', '"seq":1').replace('"lc":9', '"lc":2'))
    for state in (rebuild(tmp_path, use_cache=False), rebuild(tmp_path)):
        assert state.runs[RUN].pending_request == {
            "verb": "sleep", "launches": [{"name": "a", "command": "python x.py", "minutes": 5}],
            "messages": []}
    _raw(runs, PARKED.replace('"seq":7', '"seq":2').replace('"lc":9', '"lc":3'))
    for state in (rebuild(tmp_path, use_cache=False), rebuild(tmp_path)):
        run = state.runs[RUN]
        assert run.pending_request is None and run.submissions == 1
        assert [(p.bench, p.base, p.cand) for p in run.park_evals] == [
            (None, "11", "12"), ("tsp-large", "13", "14")]
    _raw(runs, PUBLISH_READY.replace('"seq":7', '"seq":3').replace('"lc":9', '"lc":4'))
    for state in (rebuild(tmp_path, use_cache=False), rebuild(tmp_path)):
        publish = state.runs[RUN].publish
        assert publish is not None and publish.draft
        assert publish.experiments[0].last_line == '{"mean_tour_length": 6.5}'
        assert publish.findings[0].summary == "reads the seed"
    LedgerWriter(runs).append(ev.RunEnded(run=RUN, ending="merged"))
    _raw(archive_file(tmp_path, TARGET, RUN), ARCHIVED.replace('"seq":7', '"seq":1'))
    for state in (rebuild(tmp_path, use_cache=False), rebuild(tmp_path)):
        archive = state.runs[RUN].archive
        assert archive is not None and archive.where == "s3:bucket/o__n/o__n-1"
        assert [f.md5 for f in archive.files] == ["0" * 32, "f" * 32]


def test_a_finding_is_recorded_with_the_models_fields_in_its_order_when_published() -> None:
    recorded = {f.name: (f.required, None if f.required else f.default)
                for f in msgspec.structs.fields(ev.ReviewFinding)}
    validated = {name: (f.is_required(), None if f.is_required() else f.default)
                 for name, f in Finding.model_fields.items()}
    assert list(recorded) == list(validated) and recorded == validated
    for finding in (Finding(severity="blocking", file="a.py", line=3, summary="s",
                            detail="d", source="judge-2"),
                    Finding(severity="advisory", summary="s")):
        assert msgspec.json.encode(finding.as_recorded()) == finding.model_dump_json().encode()


def test_an_eval_pair_gives_back_a_new_pair_when_one_side_is_run_again() -> None:
    pair = ev.EvalPair(bench="tsp-large", base="13", cand="14")
    again = pair.with_job("cand", "21")
    assert (again.job("base"), again.job("cand"), again.bench) == ("13", "21", "tsp-large")
    assert pair.with_job("base", "20") == ev.EvalPair(bench="tsp-large", base="20", cand="14")
    assert pair.cand == "14"  # the recorded pair is left as it was
