"""``bpvideo events OUTDIR``: the events of a result found again from its masks."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from bpvideo._cli.console import check_json_stdout, configure_logging
from bpvideo._cli.options import (
    GroupedCommand,
    click_type,
    verbosity_level,
    verbosity_options,
)
from bpvideo.settings import flag_of, option_specs

__all__ = ["events"]

EVENTS_EPILOG = """\b
Examples:
  bpvideo events out --min-event 2s --event-gap 5s
  bpvideo events out --exclude '0,0 320,0 320,40 0,40' --json | jq length
  bpvideo events out --roi door.png --event-pad 0
  bpvideo events out --events objects --count-line '0,140 320,140'

\b
Replaces OUTDIR/events.csv, frames.csv, report.html, the clips and the "events" of
summary.json as one set (staged, then swapped: a failure or Ctrl-C midway leaves the old
set whole), from the masks in OUTDIR/masks: nothing is solved. Clips are cut again from
the input (removed when it cannot be read). When the run tracked objects, or with
--events objects or --count-line, the objects are tracked again on the masks:
objects.csv, tracks.csv and summary.json's "objects" and "counts" join the set. Options
not given keep the run's values (summary.json's settings); a region can only narrow the
run's, whose masks hold no foreground outside it. The overlay shows the masks, not the
events: it stays.
"""


def _event_options(func: Callable) -> Callable:
    from bpvideo.sinks.rederive import EVENT_SETTINGS

    specs = {name: spec for name, _, spec in option_specs()}
    for name in reversed(EVENT_SETTINGS):
        spec = specs[name]
        func = click.option(flag_of(name, spec), name, default=None, help=spec.help,
                            metavar=spec.metavar, type=click_type(spec),
                            multiple=spec.kind in ("regions", "lines"))(func)  # fmt: skip
    return func


@click.command(cls=GroupedCommand, epilog=EVENTS_EPILOG)
@click.argument("outdir", metavar="OUTDIR")
@_event_options
@click.option("--json", "as_json", is_flag=True, help="Print the events as JSON on stdout.")
@verbosity_options
def events(
    outdir: str,
    as_json: bool,
    verbose: bool,
    quiet: bool,
    debug: bool,
    logfile: str | None,
    **options: Any,
) -> None:
    """Find the events of OUTDIR (an output of `bpvideo separate`) again, from its masks.

    Prints the path of events.csv on stdout (or, with --json, the events).
    """
    from pathlib import Path

    from bpvideo.sinks.guard import logfile_access
    from bpvideo.sinks.rederive import rederive

    level = verbosity_level(verbose, quiet)
    configure_logging(level)  # --logfile once the guard has seen it
    check_json_stdout(as_json)
    given = {k: v for k, v in options.items() if v is not None and v != ()}
    summary = rederive(outdir, writes=logfile_access(logfile),
                       checked=lambda: configure_logging(level, logfile), **given)  # fmt: skip
    if as_json:
        click.echo(json.dumps(summary["events"], indent=2))
    else:
        click.echo(str(Path(outdir) / "events.csv"))
