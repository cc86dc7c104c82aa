"""Hashes of every output of ``bpvideo separate`` on the dev sequences and the sample.

A refactoring that must not change results (masks bit-identical, outputs identical apart
from timings) is checked by running this with the old and the new code and comparing the
two listings. Each sequence is separated at the defaults (``--no-video`` unless ``--video``)
by the given ``bpvideo`` executable; the listing has one line per output file: its SHA-256,
or for ``summary.json`` the SHA-256 of its JSON with every timing, the version and the
paths removed, for ``report.html`` of its bytes without the minute it was written.

Usage::

    python benchmarks/output_hashes.py --bpvideo .venv/bin/bpvideo > new.txt
    python benchmarks/output_hashes.py --bpvideo /old/venv/bin/bpvideo > old.txt
    diff old.txt new.txt
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _sequences import DATA, discover

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data" / "sample.mp4"
#: Keys of summary.json that change from run to run or from version to version.
VOLATILE = {"seconds", "version", "output", "memory", "masks", "input", "peak_memory_mib"}


def _stable(value: Any) -> Any:
    """``value`` without the keys of :data:`VOLATILE`, at any depth."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


#: The minute ``report.html`` was written (its only part that changes from run to run).
WRITTEN = re.compile(rb"report written [0-9-]+ [0-9:]+ UTC")


def digest(path: Path) -> str:
    """SHA-256 of a file; of its stable JSON for ``summary.json``; of ``report.html``
    without the minute it was written."""
    if path.name == "summary.json":
        data = json.dumps(_stable(json.loads(path.read_text())), sort_keys=True)
        return hashlib.sha256(data.encode()).hexdigest()
    if path.name == "report.html":
        return hashlib.sha256(WRITTEN.sub(b"report written", path.read_bytes())).hexdigest()
    return hashlib.sha256(path.read_bytes()).hexdigest()


def masks_digest(folder: Path) -> str:
    """One SHA-256 over every mask file, in name order (names included)."""
    h = hashlib.sha256()
    for path in sorted(folder.iterdir()):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def inputs(data: Path = DATA) -> dict[str, Path]:
    """The sample clip and every dev sequence's frames, by name."""
    found = {"sample": SAMPLE}
    for name in discover(data):
        root = data / name
        found[name] = root / "input" if (root / "input").is_dir() else root
    return found


def run(bpvideo: str, name: str, source: Path, video: bool) -> list[str]:
    """Lines ``name file sha256`` for one separate run of ``source``."""
    with tempfile.TemporaryDirectory(prefix="bpvideo-hash-") as tmp:
        out = Path(tmp) / "out"
        cmd = [bpvideo, "separate", str(source), "-o", str(out), "-q"]
        if not video:
            cmd.append("--no-video")
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        lines = [f"{name} masks/ {masks_digest(out / 'masks')}"]
        for path in sorted(p for p in out.iterdir() if p.is_file()):
            lines.append(f"{name} {path.name} {digest(path)}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bpvideo", default="bpvideo", help="the bpvideo executable to run")
    parser.add_argument("--video", action="store_true", help="also write and hash the videos")
    parser.add_argument("--only", nargs="*", help="names of the inputs to run (default: all)")
    args = parser.parse_args()
    for name, source in inputs().items():
        if args.only and name not in args.only:
            continue
        print(f"hashing {name}", file=sys.stderr)
        for line in run(args.bpvideo, name, source, args.video):
            print(line, flush=True)


if __name__ == "__main__":
    main()
