"""The ``bpvideo`` command line: parsing only; the work is in :mod:`bpvideo.pipeline`.

Errors are one line on stderr (``bpvideo: error: ...``) with exit code 2 for usage
errors and 1 for failed work; ``--debug`` (or ``BPVIDEO_DEBUG=1``) shows the traceback.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from bpvideo import __version__
from bpvideo.console import configure_logging, iteration_reporter
from bpvideo.errors import BpvideoError, Terminated
from bpvideo.settings import SeparateSettings, Spec, option_specs

__all__ = ["cli", "main"]

SEPARATE_EPILOG = """\b
Examples:
  bpvideo separate sample_data/sample.mp4 -o out
  bpvideo separate traffic.mp4 --rank 2 --sparsity 0.1 --json > summary.json
  bpvideo separate cdnet/highway/input -o hw --scale 0.5 --observe 0.7 --seed 1
  bpvideo separate clip.avi -o out --threshold 20 --min-area 50 --lossless
  bpvideo separate a.mp4 'cams/*.mp4' -o 'OUT/{stem}'
  ffmpeg -i cam.mp4 -f rawvideo -pix_fmt gray - | bpvideo separate - --size 320x240
    -o out --masks-to - | ffmpeg -f rawvideo -pix_fmt gray -s 320x240 -i - masks.mkv

\b
Outputs (in OUTDIR): background.mp4, foreground.mp4, masks/bin%06d.png,
background.png, summary.json (written last: its presence marks a complete result).
"""


def _click_type(spec: Spec) -> Any:
    if spec.kind == "int":
        return int
    if spec.kind == "float":
        return float
    if spec.choices is not None:
        return click.Choice(spec.choices)
    return str


def _flag(name: str, spec: Spec) -> str:
    return spec.flag or "--" + name.replace("_", "-")


def settings_options(func: Callable) -> Callable:
    """Add one click option per field of :class:`SeparateSettings` (defaults left to it)."""
    for name, default, spec in reversed(option_specs()):
        if not spec.cli:
            continue
        flag = _flag(name, spec)
        shown = "all" if default is None and name == "frames" else default
        help_text = spec.help if default is None else f"{spec.help}  [default: {shown}]"
        if spec.kind == "bool":
            if spec.secondary:
                decl = f"{flag}/{spec.secondary}"
                func = click.option(decl, name, default=None, help=help_text)(func)
            else:
                func = click.option(flag, name, is_flag=True, default=None, help=help_text)(func)
        else:
            func = click.option(
                flag,
                name,
                type=_click_type(spec),
                default=None,
                help=help_text,
                metavar=spec.metavar,
            )(func)
    return func


def verbosity_options(func: Callable) -> Callable:
    """``-v``, ``-q`` and ``--debug``."""
    func = click.option("--debug", is_flag=True, help="Show tracebacks of errors.")(func)
    func = click.option("-q", "--quiet", is_flag=True, help="Errors only on stderr.")(func)
    func = click.option(
        "-v", "--verbose", is_flag=True, help="Log the solver's iteration table on stderr."
    )(func)
    return func


def _verbosity(verbose: bool, quiet: bool) -> int:
    return -1 if quiet else (1 if verbose else 0)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="bpvideo")
def cli() -> None:
    """Separate the static background from the moving foreground of fixed-camera video.

    Robust PCA in its best-pair form (Dutta, Hanzely, Liang, Richtárik), solved by
    accelerated proximal gradient. Logs go to stderr; stdout carries only paths or JSON.
    """


@cli.command(epilog=SEPARATE_EPILOG)
@click.argument("inputs", metavar="INPUT...", nargs=-1, required=True)
@click.option(
    "-o",
    "--output",
    metavar="OUTDIR",
    default=None,
    help="Output directory, or a template for many inputs: {stem}, {name}, {parent}, "
    "{index}  [default: INPUT's name + '-bpvideo']",
)
@settings_options
@click.option("--json", "as_json", is_flag=True, help="Print summary.json to stdout.")
@verbosity_options
def separate(
    inputs: tuple[str, ...],
    output: str | None,
    as_json: bool,
    verbose: bool,
    quiet: bool,
    debug: bool,
    **options: Any,
) -> None:
    """Separate INPUT (video files, folders of frames, globs, or - for stdin).

    Writes OUTDIR and prints its path (or, with --json, the summary) on stdout; one line
    per input when there are several (JSON lines with --json).
    """
    from bpvideo.errors import InputError
    from bpvideo.pipeline import expand_inputs, format_output, separate_many
    from bpvideo.pipeline import separate as run_separate

    verbosity = _verbosity(verbose, quiet)
    configure_logging(verbosity)
    given = {k: v for k, v in options.items() if v is not None}
    settings = SeparateSettings.from_mapping(given)
    paths = expand_inputs(list(inputs))
    callback, close = iteration_reporter(settings.max_iter, verbosity)
    try:
        if len(paths) == 1:
            out = None if output is None else format_output(output, paths[0], 1)
            summary = run_separate(paths[0], out, settings, callback=callback)
            if settings.masks_to == "-":
                return  # stdout carries only the masks
            if as_json:
                click.echo(json.dumps(summary, indent=2))
            else:
                click.echo(summary["output"])
            return
        if settings.masks_to is not None:
            raise InputError(
                f"--masks-to {settings.masks_to} takes one input, got {len(paths)}: run the "
                "inputs one at a time"
            )
        failed = 0
        for _path, _, summary, error in separate_many(paths, output, settings, callback=callback):
            if error is not None:
                failed += 1
                click.echo(f"bpvideo: error: {error.message}", err=True)
                continue
            assert summary is not None
            click.echo(json.dumps(summary) if as_json else summary["output"])
            sys.stdout.flush()
        if failed:
            click.echo(f"bpvideo: {failed} of {len(paths)} input(s) failed", err=True)
            raise click.exceptions.Exit(1)
    finally:
        close()


EVALUATE_EPILOG = """\b
Examples:
  bpvideo evaluate out sample_data/groundtruth
  bpvideo evaluate hw cdnet/highway/groundtruth --json | jq .summary.f_measure
  bpvideo evaluate out/masks WavingTrees/hand_segmented_00247.BMP --csv scores.csv

\b
Rules (changedetection.net): ground truth 255 is foreground, 0 and 50 background,
85 and 170 ignored; ROI.bmp and temporalROI.txt beside groundtruth/ are used when
present. The per-frame CSV goes to MASKS/evaluation.csv when MASKS is an output
directory of `separate` (to --csv PATH otherwise, or as well).
"""


@cli.command(epilog=EVALUATE_EPILOG)
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
@verbosity_options
def evaluate(
    masks: str,
    groundtruth: str,
    roi: str | None,
    temporal_roi: str | None,
    csv_path: str | None,
    as_json: bool,
    verbose: bool,
    quiet: bool,
    debug: bool,
) -> None:
    """Score the foreground masks in MASKS against GROUNDTRUTH.

    MASKS is an output directory of `bpvideo separate` (or its masks/ folder of
    bin%06d.png). GROUNDTRUTH is a changedetection.net groundtruth/ folder or one
    Wallflower-style frame (its number is a 0-based frame index). Prints the seven
    changedetection.net metrics, mean SSIM and mean epsilon-proximity on stderr and the
    CSV's path on stdout (or, with --json, the scores as JSON on stdout).
    """
    from bpvideo import evaluate as ev

    configure_logging(_verbosity(verbose, quiet))
    troi = ev.parse_temporal_roi(temporal_roi) if temporal_roi is not None else None
    result = ev.evaluate(masks, groundtruth, roi=roi, temporal_roi=troi)
    if csv_path is None and (Path(masks) / "masks").is_dir():
        csv_path = str(Path(masks) / "evaluation.csv")
    if csv_path is not None:
        result.info["csv"] = str(result.to_csv(csv_path))
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        if not quiet:
            click.echo(ev.format_table(result), err=True)
        if csv_path is not None:
            click.echo(result.info["csv"])


BATCH_EPILOG = """\b
Examples:
  bpvideo batch configs/night.yaml --workers 2
  bpvideo batch configs/night.yaml --dry-run
  bpvideo batch configs/night.yaml --resume
  bpvideo batch configs/night.yaml --executor dask --scheduler tcp://host:8786

\b
Paths in the config are relative to its folder. The report (per job: input, output,
status, seconds, frames, error) goes to batch_report.json beside the config unless
--report or 'report:' says otherwise. Exit 0 when every job succeeded, 1 otherwise,
2 for an invalid config (every problem listed, file:line, nothing run).
"""


@cli.command(epilog=BATCH_EPILOG)
@click.argument("config_path", metavar="CONFIG.yaml")
@click.option(
    "-w",
    "--workers",
    type=click.IntRange(min=1),
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
    help="Where to write the JSON report  [default: batch_report.json beside the config]",
)
@click.option("--resume", is_flag=True, help="Skip jobs whose outputs are complete and match.")
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
    dry_run: bool,
    verbose: bool,
    quiet: bool,
    debug: bool,
) -> int:
    """Run the separate jobs of a YAML config, on local processes or a Dask cluster."""
    from bpvideo.batch import BatchOptions, run_batch
    from bpvideo.config import ConfigError

    verbosity = _verbosity(verbose, quiet)
    configure_logging(verbosity)
    options = BatchOptions(
        workers=workers,
        executor=executor,
        scheduler=scheduler,
        report=report,
        resume=resume,
        dry_run=dry_run,
        progress=verbosity >= 0,
    )
    try:
        return run_batch(config_path, options, stdout=click.echo)
    except ConfigError as exc:
        if debug:
            raise
        for problem in exc.problems:
            click.echo(f"bpvideo: error: {problem}", err=True)
        count = len(exc.problems)
        click.echo(
            f"bpvideo: error: {config_path}: {count} problem{'s' if count > 1 else ''}, "
            "nothing was run: fix them and run again",
            err=True,
        )
        return exc.exit_code


def _debug_requested(argv: list[str]) -> bool:
    return "--debug" in argv or os.environ.get("BPVIDEO_DEBUG", "") not in ("", "0")


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated(signum)


@contextmanager
def _sigterm_raises(process_exit: bool = False) -> Iterator[None]:
    """Turn SIGTERM into :class:`~bpvideo.errors.Terminated` while the command runs.

    Python's default for SIGTERM is to die at once, skipping ``finally`` blocks: staged
    outputs and ffmpeg children would be left behind. Only the main thread can set signal
    handlers; elsewhere (``main`` called from a worker thread) nothing changes.

    With ``process_exit`` (the ``bpvideo`` process itself, not an in-process call), once
    the command is over SIGINT and SIGTERM get their default action back: a signal that
    arrives while the process exits ends it quietly instead of raising in the
    interpreter's shutdown (a traceback after the work is done).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        if process_exit:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
        else:
            signal.signal(signal.SIGTERM, previous)


def _committed() -> list:
    writer = sys.modules.get("bpvideo.writer")  # not loaded: nothing was written
    return list(writer.COMMITTED) if writer is not None else []


def _interrupted(what: str, before: int) -> str:
    complete = _committed()[before:]
    if complete:
        return (
            f"bpvideo: {what} after the result in {complete[-1]} was complete (summary.json "
            "written)"
        )
    return (
        f"bpvideo: {what}: no output was kept (outputs appear only when complete); "
        "run the command again"
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``bpvideo`` console script; returns the exit code.

    Exit codes: 0 done, 1 failed work, 2 usage error, 130 interrupted (SIGINT, Ctrl-C),
    143 terminated (SIGTERM). Interrupted runs remove their staged outputs first.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    debug = _debug_requested(args)
    before = len(_committed())
    try:
        with _sigterm_raises(process_exit=argv is None):
            result = cli.main(args=args, prog_name="bpvideo", standalone_mode=False)
    except Terminated as exc:
        click.echo(_interrupted(f"terminated by signal {exc.signum}", before), err=True)
        return 128 + exc.signum
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        hint = ""
        if isinstance(exc, click.UsageError) and exc.ctx is not None:
            hint = f" (see '{exc.ctx.command_path} --help')"
        click.echo(f"bpvideo: error: {exc.format_message()}{hint}", err=True)
        return exc.exit_code
    except (KeyboardInterrupt, click.exceptions.Abort):
        click.echo(_interrupted("interrupted", before), err=True)
        return 130
    except BpvideoError as exc:
        if debug:
            raise
        click.echo(f"bpvideo: error: {exc.message}", err=True)
        return exc.exit_code
    except BrokenPipeError:
        # The reader of stdout went away (``... | head``): end quietly. Point stdout at
        # /dev/null so that the interpreter's final flush cannot complain.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 1

    except Exception as exc:
        if debug:
            raise
        click.echo(
            f"bpvideo: internal error: {type(exc).__name__}: {exc} (rerun with --debug for the "
            "traceback and report it)",
            err=True,
        )
        return 1
    return result if isinstance(result, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
