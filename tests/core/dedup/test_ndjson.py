"""`events-manifest dedup`, the NDJSON front end of generic dedup: every line sorted into one
output, memory flat as the input grows, half an expiry refused, a progress line on a terminal."""

from __future__ import annotations

import io
import json
import tracemalloc
from pathlib import Path

import pytest

from events_manifest._cli import main
from events_manifest._dedup.ndjson import _Progress
from tests.dedup_helpers import RECORDS


def _write(path: Path, lines: list[str]) -> None:
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")


def test_cli_sorts_every_line_into_one_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [json.dumps(r, separators=(",", ":")) if isinstance(r, dict) else json.dumps(r) for r in RECORDS]
    lines[0] = '{"user": "u1",  "order":1, "ts":"2026-11-01T10:00:00Z","total":5}'  # spacing kept as is
    lines.insert(2, "not json")
    _write(tmp_path / "in.ndjson", lines)
    outs = {name: tmp_path / f"{name}.ndjson" for name in ("unique", "duplicates", "expired", "errors")}
    args = [
        "dedup",
        str(tmp_path / "in.ndjson"),
        "--key",
        "user,order",
        "--expiry-field",
        "ts",
        "--expiry-period",
        "1d",
    ]
    args += ["--manifest", f"sqlite:///{tmp_path}/m.db", "--etl-time", "2026-11-01 06:00:00"]
    args += [f"--{name}={path}" for name, path in outs.items()]
    assert main(args) == 0
    written = {name: path.read_text(encoding="utf-8").splitlines() for name, path in outs.items()}
    assert written["unique"] == [lines[0], lines[3], lines[4], lines[9]]
    assert written["duplicates"] == [lines[1]]
    assert written["expired"] == [lines[5]]
    errors = [json.loads(x) for x in written["errors"]]
    assert [e["line"] for e in errors] == ["not json", lines[6], lines[7], lines[8]]
    assert errors[0]["reason"].startswith("line 3 is not JSON")
    report = capsys.readouterr().out
    assert "unique     4" in report and "error      4" in report and "etl time 2026-11-01 06:00:00" in report

    assert main([*args, "--rerun"]) == 0  # a rerun on purpose, with the same etl time, gives the same outputs
    assert {name: path.read_text(encoding="utf-8").splitlines() for name, path in outs.items()} == written


def test_cli_memory_stays_flat_as_the_input_grows(tmp_path: Path) -> None:
    def peak(records: int) -> int:
        source = tmp_path / f"in-{records}.ndjson"
        _write(source, [json.dumps({"id": n % (records // 2), "pad": "x" * 50}) for n in range(records)])
        tracemalloc.start()
        manifest = f"sqlite:///{tmp_path}/m-{records}.db"  # on disk, like the run's own pairs
        out = str(tmp_path / "u")
        main(["dedup", str(source), "--key", "id", "--manifest", manifest, "--unique", out, "--chunk-size", "500"])
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    small, large = peak(2_000), peak(10_000)  # five times the input: twenty chunks against four
    assert large < 2 * small, (small, large)


def test_cli_refuses_half_an_expiry(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["dedup", "-", "--key", "id", "--manifest", "memory://", "--expiry-field", "ts"]) == 1
    assert "--expiry-field and --expiry-period go together" in capsys.readouterr().err


def test_progress_line_on_a_terminal() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    progress = _Progress(terminal)
    progress.update({"unique": 1200, "duplicate": 3}, force=True)
    assert "1,203 records  unique 1,200  duplicate 3" in terminal.getvalue()
    quiet = io.StringIO()
    _Progress(quiet).update({"unique": 1}, force=True)
    assert quiet.getvalue() == ""
