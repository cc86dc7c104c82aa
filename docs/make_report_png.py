"""Make docs/report.png: the report.html of the bundled sample, as headless Chromium shows it.

Usage::

    python docs/make_report_png.py [--out docs/report.png]

Runs ``bpvideo separate sample_data/sample.mp4 --event-threshold 0.04 --clips`` (the
worked example of README's "Finding events") into a temporary folder and screenshots its
report.html with Debian's ``chromium`` (``apt-get install chromium``), offline.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a script from a source checkout
    sys.path.insert(0, str(REPO))

from bpvideo import separate_file  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "report.png")
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("chromium is not installed: apt-get install chromium")
    os.chdir(REPO)  # the report names the input as given: sample_data/sample.mp4
    with tempfile.TemporaryDirectory(prefix="bpvideo-report-") as tmp:
        out = Path(tmp) / "out"
        separate_file(
            "sample_data/sample.mp4", out, no_video=True, event_threshold=0.04, clips=True
        )
        shot = Path(tmp) / "report.png"
        subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--no-first-run", f"--user-data-dir={Path(tmp) / 'profile'}",
             "--hide-scrollbars", f"--screenshot={shot}", "--window-size=1200,1200",
             (out / "report.html").as_uri()],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        args.out.write_bytes(shot.read_bytes())
    print(args.out)


if __name__ == "__main__":
    main()
