"""Choose the live model's constants: each candidate replays the dev sequences in process
as a live stream, and is judged by its worst live / batch ratio, leaving one sequence out.

The replay is ``bpvideo.pipeline.online.iter_live_blocks`` on the frames as read, in
batches of 8, learning on the first 4 s (100 frames at 25 fps) as ``--live`` does: the
same masks as a real stream but for the moment each re-solve is swapped in, and no
network or decoder in the way (``bench_live.py quality`` measures the real thing).

Candidates are as ``select_defaults.py``'s: ``"NAME KEY=VALUE ..."``, dotted keys naming
module constants (``masks.bank.BANK_MATCHES=5``). The rule: sort each candidate's
live / batch ratios from the worst; the better candidate has the higher worst ratio, ties
(within ``select_defaults.TIE``) being decided by the next worst, and so on.

``--bound`` prints, for each sequence with per-frame ground truth, what the best online
masks could score when something stands in front of the background from the stream's
first frame: the ground truth itself, less each pixel that has been foreground since the
first frame and has shown the same (within :data:`SAME` grey levels) in every frame so
far. No frame before has shown such a pixel change, nor what is behind it, so no method
that masks a frame from the frames up to it can tell it from background (a method that
knows what people look like could). A live run cannot come within 10 % of batch where
the bound is lower. Beside it, a tighter bound: the ground truth less each pixel that
has been foreground in every frame so far, whether it changed or not (a person standing
from the first frame who moves an arm shows the arm, never the ground behind it).

Example::

    python benchmarks/live_replay.py --candidate "k3 masks.bank.BANK_MATCHES=3" \\
        --candidate "k5 masks.bank.BANK_MATCHES=5" --json live_scores.json
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _sequences import DATA, Sequence, discover, per_frame_truth, run_bpvideo
from select_defaults import choose, constants, parse_candidate

from bpvideo.pipeline.online import iter_live_blocks
from bpvideo.settings import settings_of

log = logging.getLogger("live_replay")
FPS = 25.0


def replay(seq: Sequence, options: dict) -> float:
    """F-measure of ``seq`` replayed as a live stream with ``options`` (dotted: constants)."""
    settings = settings_of({k: v for k, v in options.items() if "." not in k}, arrays=True)
    frames = list(enumerate(seq.frames))
    batches = (frames[i : i + 8] for i in range(0, len(frames), 8))
    masks: dict[int, np.ndarray] = {}
    consts = {k: v for k, v in options.items() if "." in k}
    with constants(consts), threadpool_limits(limits=1, user_api="blas"):
        for block in iter_live_blocks(batches, settings, fps=FPS, name=seq.name,
                                      learn=(0, round(4 * FPS))):  # fmt: skip
            masks.update(zip(block.numbers, block.masks, strict=True))
    return seq.score(np.stack([masks[i] for i in range(len(frames))]))["f_measure"]


#: Grey levels (largest channel) within which a pixel "shows the same" (``--bound``).
SAME = 25


def causal_bound(seq: Sequence, changes: bool = True) -> tuple[float, float]:
    """The share of the foreground no online method can see, and the F-measure of the
    ground truth without it (see the module docstring). ``changes=False``: a tighter
    bound, where a pixel is also unseen while it has changed but never shown what is
    behind it (foreground in every frame so far: a person who stands from the first
    frame and moves an arm shows the arm, not the ground)."""
    truth = seq.labels() == 255
    start = seq.frames[0].astype(np.int16)
    unseen = truth[0].copy()  # foreground since the first frame, never seen to change
    oracle = truth.copy()
    for t in range(len(truth)):
        unseen &= truth[t]
        if changes:
            unseen &= np.abs(seq.frames[t] - start).max(axis=-1) < SAME
        oracle[t] &= ~unseen
    hidden = 1 - np.count_nonzero(oracle) / max(1, np.count_nonzero(truth))
    return hidden, seq.score(oracle)["f_measure"]


def report(scores: dict[str, dict[str, float]], batch: dict[str, float]) -> str:
    """Markdown: every candidate's F, the choice on all, and leave one out."""
    sequences = list(batch)
    ratios = {c: {s: per[s] / batch[s] for s in sequences} for c, per in scores.items()}
    short = [s.split("_", 1)[-1] for s in sequences]
    lines = ["| candidate | " + " | ".join(short) + " | worst ratios |",
             "|---|" + "---|" * (len(sequences) + 1),
             "| batch | " + " | ".join(f"{batch[s]:.3f}" for s in sequences) + " | |"]  # fmt: skip
    for cand, per in scores.items():
        worst = ", ".join(f"{r:.3f}" for r in sorted(ratios[cand].values())[:3])
        lines.append(f"| {cand} | " + " | ".join(f"{per[s]:.3f}" for s in sequences)
                     + f" | {worst} |")  # fmt: skip
    lines += [
        "",
        f"Chosen on all: {choose(ratios, sequences)}",
        "",
        "| left out | chosen on the others | its ratio | its F |",
        "|---|---|---|---|",
    ]
    held = []
    for s in sequences:
        cand = choose(ratios, [x for x in sequences if x != s])
        held.append(ratios[cand][s])
        lines.append(f"| {s} | {cand} | {ratios[cand][s]:.3f} | {scores[cand][s]:.3f} |")
    lines.append(f"| **mean** | | {np.mean(held):.3f} | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--sequences", nargs="+", help="default: every one with ground truth")
    parser.add_argument("--candidate", action="append", default=[], metavar="'NAME K=V ...'")
    parser.add_argument("--json", type=Path, help="scores file (read, then updated)")
    parser.add_argument("--bound", action="store_true", help="the online bound (docstring)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    saved = json.loads(args.json.read_text()) if args.json and args.json.exists() else {}
    if args.bound:
        print("| sequence | foreground unseen | bound F | batch F | bound / batch | unseen, "
              "ground never shown | tighter bound F |")  # fmt: skip
        print("|---|---|---|---|---|---|---|")
        for name in args.sequences or discover(args.data):
            if not per_frame_truth(name, args.data):
                continue
            seq = Sequence.load(name, args.data)
            hidden, bound = causal_bound(seq)
            covered, tighter = causal_bound(seq, changes=False)
            batch = saved.get("batch", {}).get(name) or run_bpvideo(seq, {})["f_measure"]
            print(f"| {name} | {hidden:.1%} | {bound:.3f} | {batch:.3f} | {bound / batch:.2f} "
                  f"| {covered:.1%} | {tighter:.3f} |")  # fmt: skip
        return 0
    candidates = dict(parse_candidate(c) for c in ["defaults", *args.candidate])
    scores, batch = saved.get("scores", {}), saved.get("batch", {})
    for name in args.sequences or discover(args.data):
        seq = Sequence.load(name, args.data)
        if name not in batch:
            batch[name] = run_bpvideo(seq, {})["f_measure"]
        for cand, options in candidates.items():
            if name not in scores.get(cand, {}):
                scores.setdefault(cand, {})[name] = replay(seq, options)
                log.info("%s %s: F %.3f", name, cand, scores[cand][name])
                if args.json:
                    args.json.write_text(json.dumps({"scores": scores, "batch": batch}))
    scores = {c: scores[c] for c in candidates}
    print(report(scores, batch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
