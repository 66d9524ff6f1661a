"""Who holds a file, as a refusal names it (`events_manifest._manifest.liveness`)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from events_manifest._manifest.liveness import holders


def test_a_holder_s_command_is_one_line_cut(tmp_path: Path) -> None:
    """A `python -c` script of several lines, holding the file open: one line, at most 120 characters."""
    held = tmp_path / "manifest.db"
    held.write_bytes(b"")
    script = (
        f"import time\nf = open({str(held)!r})\nprint('open', flush=True)\n\n" + "# padding\n" * 20 + "time.sleep(60)"
    )
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        deadline = time.monotonic() + 10
        while not (found := holders(str(held))) and time.monotonic() < deadline:
            time.sleep(0.05)
        [said] = found
        assert said.startswith(f"process {holder.pid} ({sys.executable[:100]}")
        assert len(sys.executable) > 80 or f"{sys.executable} -c import time f = open(" in said
        assert "\n" not in said and len(said) <= len(f"process {holder.pid} ()") + 120 and said.endswith("...)")
    finally:
        holder.kill()
        holder.wait()
