"""A run's outputs staged under a hidden folder, then moved into place together (`_jobs.staging`),
with the shred job's layout (`_snowplow.shred_output.places`), on local folders: each kind where
the job's outputs go, two staged writes merged, one never written adding nothing."""

from __future__ import annotations

from pathlib import Path

from events_manifest._jobs.staging import Staging
from events_manifest._jobs.storage import LocalStorage
from events_manifest._snowplow.shred_output import places


def test_staged_kinds_move_into_the_shred_job_s_layout_and_the_staging_folder_goes(tmp_path: Path) -> None:
    storage, out, bad = LocalStorage(), tmp_path / "out", tmp_path / "bad"
    staging = Staging(storage, str(out))
    assert Path(staging.root).parent == out and Path(staging.root).name.startswith(".staging-")
    shredded = "kind=shredded/type=com.acme%2Fclick%2Fjsonschema%2F1-0-0"
    for name, files in {"a": ["kind=atomic/type=_/part-0", f"{shredded}/part-0", "kind=bad/type=_/part-0"],
                        "b": ["kind=atomic/type=_/part-1"]}.items():  # fmt: skip
        for file in files:
            (Path(staging.path(name)) / file).parent.mkdir(parents=True, exist_ok=True)
            (Path(staging.path(name)) / file).write_text(f"{name}/{file}\n")
    written = [staging.path(name) for name in ("a", "b", "never")]
    staging.commit(places(written, str(out), str(bad)))
    found = {str(p.relative_to(tmp_path)): p.read_text() for p in sorted(tmp_path.rglob("*")) if p.is_file()}
    assert found == {
        "bad/_SUCCESS": "",
        "bad/part-0": "a/kind=bad/type=_/part-0\n",
        "out/atomic-events/_SUCCESS": "",
        "out/atomic-events/part-0": "a/kind=atomic/type=_/part-0\n",
        "out/atomic-events/part-1": "b/kind=atomic/type=_/part-1\n",
        "out/shredded-types/_SUCCESS": "",
        "out/shredded-types/vendor=com.acme/name=click/format=jsonschema/version=1-0-0/part-0": (
            f"a/{shredded}/part-0\n"
        ),
    }
    assert not Path(staging.root).exists()
