"""The ``bpvideo`` command line: click commands only; the work is in the library
(:func:`bpvideo.separate_file`, :func:`bpvideo.evaluate`, :mod:`bpvideo.batch`).

Options come from :mod:`bpvideo.settings` (one table for the CLI, YAML and the library);
errors, exit codes, logging and progress are in :mod:`bpvideo._cli.console`.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import click

from bpvideo._cli.console import (
    CLOSED_STREAMS,
    check_json_stdout,
    configure_logging,
    error_line,
    iteration_table,
    one_line,
    progress_bar,
    run,
)
from bpvideo._cli.events import events
from bpvideo._cli.options import (
    GroupedCommand,
    settings_options,
    verbosity_level,
    verbosity_options,
)
from bpvideo._version import __version__
from bpvideo.errors import BpvideoError, InputError
from bpvideo.limits import MAX_WORKERS
from bpvideo.settings import SeparateSettings, merge_options

__all__ = ["GroupedCommand", "cli", "main"]

SEPARATE_EPILOG = """\b
Examples:
  bpvideo separate sample_data/sample.mp4 -o out
  bpvideo separate traffic.mp4 --rank 2 --sparsity 0.1 --json > summary.json
  bpvideo separate cdnet/highway/input -o hw --scale 0.5 --observe 0.7 --seed 1
  bpvideo separate clip.avi -o out --threshold 20 --min-area 50 --lossless
  bpvideo separate a.mp4 'cams/*.mp4' -o 'OUT/{stem}'
  bpvideo separate cam.mp4 --start 00:01:30 --duration 10s -o out
  bpvideo separate cam.mp4 -c site.yaml --crf 23 --preset fast   # flags over the file
  bpvideo separate frames/ --no-video -o out      # masks only: no ffmpeg needed
  bpvideo separate night.mp4 --learn 0:1500 -o out      # learn on a quiet minute, apply to all
  bpvideo separate night.mp4 -o out --logfile night.log
  bpvideo separate cam.mp4 -o out --exclude '0,0 320,0 320,40 0,40' --clips --overlay
  ffmpeg -i cam.mp4 -f rawvideo -pix_fmt gray - | bpvideo separate - --size 320x240
    -o out --masks-to - | ffmpeg -f rawvideo -pix_fmt gray -s 320x240 -i - masks.mkv

\b
Times (--start, --end, --duration, --segment): a frame number (1500), seconds
(90s, 2.5s), minutes or hours (10m, 1h) or HH:MM:SS[.ms] (00:01:30), at the
input's frame rate (--fps, else 25, for folders of frames and raw stdin).
A URL INPUT (rtsp://, http://, udp:// ...) is read live: see docs/usage.md.
-c FILE: a YAML mapping of options as under a batch config's 'defaults:' (rank: 3,
output: out/{stem}); flags win over the file, the file over the defaults.

\b
Outputs (in OUTDIR): background.mp4, foreground.mp4, masks/bin%06d.png (named
after the source frames: in000470.jpg -> bin000470.png; videos from 1),
background.png, events.csv, frames.csv, report.html (docs/events.md),
summary.json (written last: its presence marks a complete result).
"""


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="bpvideo")
def cli() -> None:
    """Separate the static background from the moving foreground of fixed-camera video.

    Robust PCA in its best-pair form (Dutta, Hanzely, Liang, Richtárik), solved by
    accelerated proximal gradient. Logs go to stderr; stdout carries only paths or JSON.
    """


@cli.command(cls=GroupedCommand, epilog=SEPARATE_EPILOG)
@click.argument("inputs", metavar="INPUT...", nargs=-1, required=True)
@click.option(
    "-o",
    "--output",
    metavar="OUTDIR",
    default=None,
    help="Output directory, or a template for many inputs: {stem}, {name}, {parent}, "
    "{index}  [default: INPUT's name + '-bpvideo']",
)
@click.option(
    "-c",
    "--config",
    "config_file",
    metavar="FILE",
    default=None,
    help="Defaults file (YAML): options as under a batch config's 'defaults:'; flags win.",
)
@settings_options
@click.option("--json", "as_json", is_flag=True, help="Print summary.json to stdout.")
@verbosity_options
def separate(
    inputs: tuple[str, ...],
    output: str | None,
    config_file: str | None,
    as_json: bool,
    verbose: bool,
    quiet: bool,
    debug: bool,
    logfile: str | None,
    **options: Any,
) -> None:
    """Separate INPUT (video files, folders of frames, globs, or - for stdin).

    Writes OUTDIR and prints its path (or, with --json, the summary) on stdout; one line
    per input when there are several (JSON lines with --json).
    """
    from bpvideo.job import separate_file
    from bpvideo.sinks.paths import expand_inputs, plan_outputs

    verbosity = verbosity_level(verbose, quiet)
    configure_logging(verbosity)  # --logfile once the guard has seen it
    given = {k: v for k, v in options.items() if v is not None and v != ()}
    if config_file is not None:  # flag > file > built-in default
        from_file = _defaults_file(config_file, debug)
        file_output = from_file.pop("output", None)
        output = output if output is not None else file_output
        given = merge_options(from_file, given)
    settings = SeparateSettings.from_mapping(given)
    live = _is_live_run(list(inputs), settings)
    paths = list(inputs) if live else expand_inputs(list(inputs))
    _check_streams(paths, settings, as_json)
    if len(paths) > 1 and settings.masks_to is not None:
        raise InputError(
            f"{{masks_to=}} takes one input, got {len(paths)}: run the inputs one at a time",
            option=("masks_to", settings.masks_to),
        )
    outputs = [None] if len(paths) == 1 and output is None else plan_outputs(paths, output)
    _guard(paths, outputs, settings, config_file, logfile)
    configure_logging(verbosity, logfile)
    if live:
        return _live_run(paths[0], output, settings, given, as_json)
    callback, bar = iteration_table(verbosity), progress_bar(verbosity)
    failed = 0
    for path, out in zip(paths, outputs, strict=True):
        try:
            report = separate_file(path, out, callback=callback, progress=bar, **given)
        except BpvideoError as exc:
            if len(paths) == 1:
                raise
            failed += 1
            click.echo(error_line(exc), err=True)
            continue
        finally:
            bar.close()
        if settings.masks_to == "-":
            return  # stdout carries only the masks
        summary = report.to_dict()
        if len(paths) == 1:
            click.echo(json.dumps(summary, indent=2) if as_json else summary["output"])
        else:
            click.echo(json.dumps(summary) if as_json else summary["output"])
            sys.stdout.flush()
    if failed:
        click.echo(f"bpvideo: {failed} of {len(paths)} input(s) failed", err=True)
        raise click.exceptions.Exit(1)


def _guard(
    paths: list[str],
    outputs: list[Any],
    settings: SeparateSettings,
    config_file: str | None,
    logfile: str | None,
) -> None:
    """No input may be another's output, nor the defaults file or ``--logfile`` any of
    them, whatever the source (one input, no file of the command's own: the job checks)."""
    from bpvideo.job import output_path
    from bpvideo.sinks.guard import check_jobs, config_reads, logfile_access

    if len(paths) == 1 and config_file is None and logfile is None:
        return
    if len(paths) == 1 and outputs[0] is not None and not str(outputs[0]).strip():
        return  # refused by the job, with its message
    jobs = [(path, output_path(path, out, settings), settings)
            for path, out in zip(paths, outputs, strict=True)]  # fmt: skip
    check_jobs(
        jobs, reads=config_reads(config_file, "the defaults file"), writes=logfile_access(logfile)
    )


def _is_live_run(inputs: list[str], settings: SeparateSettings) -> bool:
    """Whether the run reads a live INPUT (a URL, or ``--live``); a live input takes the
    whole run."""
    from bpvideo.sources.live import is_live

    if not any(is_live(path, settings) for path in inputs):
        return False
    if len(inputs) > 1:
        raise InputError(
            f"a live input takes the whole run, got {len(inputs)} inputs: run one at a time",
            option=("live", True),
        )
    return True


def _live_run(
    input: str, output: str | None, settings: SeparateSettings, given: dict[str, Any],
    as_json: bool,
) -> None:  # fmt: skip
    """Run a live INPUT (docs: usage.md, "Live cameras"); print each result folder (or its
    summary with ``--json``)."""
    from bpvideo.job import separate_live

    folders = separate_live(input, output, **given)
    if "-" in (settings.masks_to, settings.events_to):
        return  # stdout carries only data
    for folder in folders:
        summary = (folder / "summary.json").read_text()
        click.echo(json.dumps(json.loads(summary)) if as_json else str(folder))


def _defaults_file(path: str, debug: bool) -> dict[str, Any]:
    """The options of ``-c FILE``; its problems are listed, then exit 2."""
    from bpvideo.batch.config import ConfigError, load_defaults

    try:
        return load_defaults(path)
    except ConfigError as exc:
        if debug:
            raise
        raise click.exceptions.Exit(_config_problems(exc, path)) from None


def _config_problems(exc: Any, path: str) -> int:
    """Echo every problem of a config (``file:line: ...``), then a line counting them when
    there are several (one problem is one line); the exit code."""
    for problem in exc.problems:
        click.echo(f"bpvideo: error: {one_line(problem)}", err=True)
    count = len(exc.problems)
    if count < 2:
        return exc.exit_code
    click.echo(
        f"bpvideo: error: {path}: {count} problems, nothing was run: fix them and run again",
        err=True,
    )
    return exc.exit_code


def _check_streams(paths: list[str], settings: SeparateSettings, as_json: bool) -> None:
    """Refuse stdin or stdout as data when the process started with it closed."""
    if "-" in paths and 0 in CLOSED_STREAMS:
        raise InputError("INPUT is stdin ('-') but stdin is closed: pipe frames into bpvideo")
    for name in ("masks_to", "events_to"):
        if getattr(settings, name) == "-" and 1 in CLOSED_STREAMS:
            raise InputError(
                f"{{{name}=}} but stdout is closed: give a file, or a pipe on stdout",
                option=(name, "-"),
            )
    check_json_stdout(as_json)


EVALUATE_EPILOG = """\b
Examples:
  bpvideo evaluate out sample_data/groundtruth
  bpvideo evaluate hw cdnet/highway/groundtruth --json | jq .summary.f_measure
  bpvideo evaluate out/masks WavingTrees/hand_segmented_00247.BMP --csv scores.csv

\b
Rules (changedetection.net): ground truth 255 is foreground, 0 and 50 background,
85 and 170 ignored; ROI.bmp and temporalROI.txt beside groundtruth/ are used when
present. Masks are matched to ground-truth frames by name (bin000470.png is scored
against gt000470.png), as changedetection.net result files are. The per-frame CSV goes
to MASKS/evaluation.csv when MASKS is an output directory of `separate` (to --csv PATH
otherwise, or as well).
"""


@cli.command(cls=GroupedCommand, epilog=EVALUATE_EPILOG)
@click.argument("masks", metavar="MASKS")
@click.argument("groundtruth", metavar="GROUNDTRUTH")
@click.option(
    "--roi",
    metavar="ROI.bmp",
    default=None,
    help="Spatial region of interest (non-zero inside)  [default: ROI.bmp beside groundtruth/]",
)
@click.option(
    "--temporal-roi",
    metavar="FILE|FIRST:LAST",
    default=None,
    help="Ground-truth frames to score: a temporalROI.txt or FIRST:LAST  "
    "[default: temporalROI.txt beside groundtruth/, else all]",
)
@click.option(
    "--csv",
    "csv_path",
    metavar="PATH",
    default=None,
    help="Per-frame CSV  [default: MASKS/evaluation.csv for an output directory, else none]",
)
@click.option("--json", "as_json", is_flag=True, help="Print the scores as JSON on stdout.")
@click.option(
    "--allow-partial",
    is_flag=True,
    help="Score the ground-truth frames that have a mask when some have none (without it, "
    "a ground-truth frame with no mask is an error, exit 2).",
)
@verbosity_options
def evaluate(
    masks: str,
    groundtruth: str,
    roi: str | None,
    temporal_roi: str | None,
    csv_path: str | None,
    as_json: bool,
    allow_partial: bool,
    verbose: bool,
    quiet: bool,
    debug: bool,
    logfile: str | None,
) -> None:
    """Score the foreground masks in MASKS against GROUNDTRUTH.

    MASKS is an output directory of `bpvideo separate` (or its masks/ folder of
    bin%06d.png, named after their frames). GROUNDTRUTH is a changedetection.net
    groundtruth/ folder or one Wallflower-style frame. Prints the seven
    changedetection.net metrics, mean SSIM and mean epsilon-proximity on stderr and the
    CSV's path on stdout (or, with --json, the scores as JSON on stdout).
    """
    from bpvideo.evaluate.groundtruth import parse_temporal_roi
    from bpvideo.evaluate.scoring import check_complete, check_evaluation, format_table
    from bpvideo.evaluate.scoring import evaluate as score

    configure_logging(verbosity_level(verbose, quiet))  # --logfile once the guard has seen it
    check_json_stdout(as_json)
    if csv_path == "-":  # elsewhere "-" is stdout: a file named "-" is never what is meant
        raise InputError(
            "--csv -: the per-frame scores go to a file: give its path (--csv scores.csv), "
            "or --json for all the scores, per frame too, on stdout"
        )
    if csv_path is None and (Path(masks) / "masks").is_dir():
        csv_path = str(Path(masks) / "evaluation.csv")
    check_evaluation(masks, groundtruth, roi, temporal_roi, csv_path, logfile=logfile)
    configure_logging(verbosity_level(verbose, quiet), logfile)
    troi = parse_temporal_roi(temporal_roi) if temporal_roi is not None else None
    result = score(masks, groundtruth, roi=roi, temporal_roi=troi)
    if not allow_partial:
        check_complete(result)  # before any file is written
    elif unscored := result.info["unscored"]:
        logging.getLogger("bpvideo").warning(
            "%d ground-truth frame(s) have no mask and were not scored (the first: %d)",
            len(unscored), unscored[0])  # fmt: skip
    if csv_path is not None:
        result.info["csv"] = str(result.to_csv(csv_path))
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        if not quiet:
            click.echo(format_table(result), err=True)
        if csv_path is not None:
            click.echo(result.info["csv"])


BATCH_EPILOG = """\b
Examples:
  bpvideo batch configs/night.yaml --workers 2
  bpvideo batch configs/night.yaml --dry-run
  bpvideo batch configs/night.yaml --resume
  bpvideo batch configs/night.yaml --overwrite
  bpvideo batch configs/night.yaml --executor dask --scheduler tcp://host:8786

\b
Paths in the config are relative to its folder. The report (per job: input, output,
status, seconds, frames, error) goes to NAME.report.json beside NAME.yaml unless
--report or 'report:' says otherwise. Exit 0 when every job succeeded, 1 otherwise,
2 for an invalid config (every problem listed, file:line, nothing run).
"""


@cli.command(cls=GroupedCommand, epilog=BATCH_EPILOG)
@click.argument("config_path", metavar="CONFIG.yaml")
@click.option(
    "-w",
    "--workers",
    type=click.IntRange(min=1, max=MAX_WORKERS),
    default=None,
    help="Local worker processes (one BLAS thread each)  [default: 'workers:' or the cores]",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "dask"]),
    default=None,
    help="Run on local processes or on a Dask cluster  [default: 'executor:' or local]",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    default=None,
    help="Dask scheduler, e.g. tcp://host:8786 (none: a local Dask cluster of --workers).",
)
@click.option(
    "--report",
    metavar="PATH",
    default=None,
    help="Where to write the JSON report  [default: NAME.report.json beside NAME.yaml]",
)
@click.option("--resume", is_flag=True, help="Skip jobs whose outputs are complete and match.")
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace the results of an earlier run (as 'overwrite: true' in the config).",
)
@click.option(
    "--dry-run", is_flag=True, help="Print 'INPUT<TAB>OUTDIR' per job that would run; run nothing."
)
@verbosity_options
def batch(
    config_path: str,
    workers: int | None,
    executor: str | None,
    scheduler: str | None,
    report: str | None,
    resume: bool,
    overwrite: bool,
    dry_run: bool,
    verbose: bool,
    quiet: bool,
    debug: bool,
    logfile: str | None,
) -> int:
    """Run the separate jobs of a YAML config, on local processes or a Dask cluster."""
    from bpvideo.batch.config import ConfigError
    from bpvideo.batch.run import BatchOptions, run_batch

    verbosity = verbosity_level(verbose, quiet)
    configure_logging(verbosity)  # --logfile once the guard has seen it (run_batch)
    if resume and overwrite:
        raise InputError("--resume and --overwrite cannot go together (--resume keeps the "
                         "complete results, --overwrite replaces them): give one")  # fmt: skip
    options = BatchOptions(
        workers=workers,
        executor=executor,
        scheduler=scheduler,
        report=report,
        resume=resume,
        overwrite=overwrite,
        dry_run=dry_run,
        progress=verbosity >= 0,
        logfile=logfile,
        checked=lambda: configure_logging(verbosity, logfile),
    )
    try:
        return run_batch(config_path, options, stdout=click.echo)
    except ConfigError as exc:
        if debug:
            raise
        return _config_problems(exc, config_path)


cli.add_command(events)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``bpvideo`` console script; returns the exit code (see
    :func:`~bpvideo._cli.console.run`)."""
    return run(cli, argv)
