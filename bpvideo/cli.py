"""The ``bpvideo`` command line: parsing only; the work is in :mod:`bpvideo.pipeline`.

Errors are one line on stderr (``bpvideo: error: ...``) with exit code 2 for usage
errors and 1 for failed work; ``--debug`` (or ``BPVIDEO_DEBUG=1``) shows the traceback.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

import click

from bpvideo import __version__
from bpvideo.console import configure_logging, iteration_reporter
from bpvideo.errors import BpvideoError
from bpvideo.settings import SeparateSettings, Spec, option_specs

__all__ = ["cli", "main"]

SEPARATE_EPILOG = """\b
Examples:
  bpvideo separate sample_data/sample.mp4 -o out
  bpvideo separate traffic.mp4 --rank 2 --sparsity 0.1 --json > summary.json
  bpvideo separate cdnet/highway/input -o hw --scale 0.5 --observe 0.7 --seed 1
  bpvideo separate clip.avi -o out --threshold 20 --min-area 50 --lossless

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
@click.argument("input_path", metavar="INPUT")
@click.option(
    "-o",
    "--output",
    metavar="OUTDIR",
    default=None,
    help="Output directory  [default: INPUT's name + '-bpvideo']",
)
@settings_options
@click.option("--json", "as_json", is_flag=True, help="Print summary.json to stdout.")
@verbosity_options
def separate(
    input_path: str,
    output: str | None,
    as_json: bool,
    verbose: bool,
    quiet: bool,
    debug: bool,
    **options: Any,
) -> None:
    """Separate INPUT (a video file or a folder of frames) into background and foreground.

    Writes OUTDIR and prints its path (or, with --json, the summary) on stdout.
    """
    from bpvideo.pipeline import separate as run_separate

    verbosity = _verbosity(verbose, quiet)
    configure_logging(verbosity)
    given = {k: v for k, v in options.items() if v is not None}
    settings = SeparateSettings.from_mapping(given)
    callback, close = iteration_reporter(settings.max_iter, verbosity)
    try:
        summary = run_separate(input_path, output, settings, callback=callback)
    finally:
        close()
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        click.echo(summary["output"])


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


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``bpvideo`` console script; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = _debug_requested(args)
    try:
        result = cli.main(args=args, prog_name="bpvideo", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        hint = ""
        if isinstance(exc, click.UsageError) and exc.ctx is not None:
            hint = f" (see '{exc.ctx.command_path} --help')"
        click.echo(f"bpvideo: error: {exc.format_message()}{hint}", err=True)
        return exc.exit_code
    except (KeyboardInterrupt, click.exceptions.Abort):
        click.echo("bpvideo: interrupted", err=True)
        return 130
    except BpvideoError as exc:
        if debug:
            raise
        click.echo(f"bpvideo: error: {exc.message}", err=True)
        return exc.exit_code
    except BrokenPipeError:
        sys.stderr.close()
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
