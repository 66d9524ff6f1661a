"""The shred job's staging folder: lines staged by several jobs, moved into place together."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spark_integration import output


def _stage(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_type_folders_are_laid_out_as_vendor_name_format_version() -> None:
    staged = "type=com.snowplowanalytics.snowplow%2Fweb_page%2Fjsonschema%2F1-0-0"
    assert output.type_folder(staged) == (
        "vendor=com.snowplowanalytics.snowplow/name=web_page/format=jsonschema/version=1-0-0"
    )


def test_lines_staged_by_two_jobs_merge_into_one_layout(spark: Any, tmp_path: Path) -> None:
    out, bad = tmp_path / "out", tmp_path / "bad"
    bad.mkdir()
    staging = output.Staging(output.Storage(spark), str(out))
    first, second = Path(staging.path("first")), Path(staging.path("second"))
    page = "type=com.acme%2Fpage%2Fjsonschema%2F1-0-0"
    _stage(
        first,
        {
            "kind=atomic/type=_/part-1": "a1\n",
            f"kind=shredded/{page}/part-1": "p1\n",
            "kind=shredded/type=com.acme%2Fclick%2Fjsonschema%2F2-0-0/part-1": "c1\n",
            "kind=bad/type=_/part-1": "b1\n",
            "_SUCCESS": "",
        },
    )
    _stage(second, {"kind=atomic/type=_/part-2": "a2\n", f"kind=shredded/{page}/part-2": "p2\n"})

    staging.commit(output.places([str(first), str(second)], str(out), str(bad)))

    files = (p for p in tmp_path.rglob("*") if p.is_file() and not p.name.endswith(".crc"))  # Hadoop's checksums
    found = {str(p.relative_to(tmp_path)): p.read_text() for p in files}
    assert found == {
        "out/atomic-events/part-1": "a1\n",
        "out/atomic-events/part-2": "a2\n",
        "out/atomic-events/_SUCCESS": "",
        "out/shredded-types/vendor=com.acme/name=page/format=jsonschema/version=1-0-0/part-1": "p1\n",
        "out/shredded-types/vendor=com.acme/name=page/format=jsonschema/version=1-0-0/part-2": "p2\n",
        "out/shredded-types/vendor=com.acme/name=click/format=jsonschema/version=2-0-0/part-1": "c1\n",
        "out/shredded-types/_SUCCESS": "",
        "bad/part-1": "b1\n",
        "bad/_SUCCESS": "",
    }
    assert not any(p.name.startswith(".staging") for p in out.iterdir())
