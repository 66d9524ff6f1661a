"""Named steps of a run, where a test stops it to kill it there: with `EVENTS_MANIFEST_STOP_AT=STEP`
in its environment, a run that reaches STEP creates the file `EVENTS_MANIFEST_STOP_SIGNAL` names
and waits there, for the test to kill it at a known point rather than at a random moment.
Without them, a step costs a lookup of the environment.

Steps of a job's run, in order: `started` (its ledger record written, no put yet), `puts` (a
batch's puts stored, in a worker), `staged` (every output line written under the staging folder),
`sealed` (what the run is and wrote recorded there: from here it is delivered as it is),
`committing` (the earlier output deleted, this run's not yet in place), `moving` (a first part of
it moved into place), `committed` (delivered, not yet finished in the ledger). A transformer's
run has its own after `sealed` (`_transformer.run.commit`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

STOP_AT = "EVENTS_MANIFEST_STOP_AT"
SIGNAL = "EVENTS_MANIFEST_STOP_SIGNAL"


def reached(step: str) -> None:
    """Mark `step`; stop here for good if the environment asks for it (see the module docstring)."""
    if os.environ.get(STOP_AT) != step:
        return
    Path(os.environ[SIGNAL]).touch()
    while True:  # until killed: that is the point
        time.sleep(3600)
