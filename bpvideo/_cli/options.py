"""Click options of the commands, made from the option table (:mod:`bpvideo.settings`):
one option per setting, the logging options, and ``--help`` in the table's sections."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from bpvideo.settings import OPTION_GROUPS, Spec, flag_of, option_specs

__all__ = ["SECTIONS", "GroupedCommand", "settings_options", "verbosity_level", "verbosity_options"]

#: The sections of ``--help``, in order, and the parameters each shows, in order;
#: parameters in none are shown first, under "Options".
SECTIONS: dict[str, tuple[str, ...]] = {
    **OPTION_GROUPS,
    "Output": ("output", *OPTION_GROUPS["Output"], "as_json"),
    "Logging": ("verbose", "quiet", "logfile", "debug"),
    "Other": ("config_file", "help"),
}


class GroupedCommand(click.Command):
    """A click command whose ``--help`` shows its options in :data:`SECTIONS`."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Write the options, section by section (click calls it for ``--help``)."""
        sections: dict[str, list[tuple[int, tuple[str, str]]]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None or isinstance(param, click.Argument):
                continue
            title, order = "Options", 0
            key = "help" if "--help" in getattr(param, "opts", ()) else param.name
            for name, names in SECTIONS.items():
                if key in names:
                    title, order = name, names.index(key)
            sections.setdefault(title, []).append((order, record))
        for title in ("Options", *SECTIONS):
            if title in sections:
                with formatter.section(f"{title} options" if title != "Options" else title):
                    formatter.write_dl(
                        [record for _, record in sorted(sections[title], key=lambda r: r[0])]
                    )


def click_type(spec: Spec) -> Any:
    """The click type of an option's values."""
    if spec.kind == "int":
        return int
    if spec.kind == "float":
        return float
    if spec.choices is not None:
        return click.Choice(spec.choices)
    return str


def settings_options(func: Callable) -> Callable:
    """Add one click option per field of :class:`SeparateSettings` (defaults left to it)."""
    for name, default, spec in reversed(option_specs()):
        if not spec.cli:
            continue
        flag = flag_of(name, spec)
        shown = default
        if spec.kind == "bool":  # a flag's default is to be off; a pair's is one of its flags
            shown = (flag if default else spec.secondary) if spec.secondary else None
        help_text = spec.help if shown is None else f"{spec.help}  [default: {shown}]"
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
                type=click_type(spec),
                default=None,
                help=help_text if default != () else spec.help,
                metavar=spec.metavar,
                multiple=spec.kind in ("regions", "lines"),
            )(func)
    return func


def verbosity_options(func: Callable) -> Callable:
    """``-v``, ``-q``, ``--logfile`` and ``--debug``."""
    func = click.option("--debug", is_flag=True, help="Show tracebacks of errors.")(func)
    func = click.option(
        "--logfile",
        metavar="PATH",
        default=None,
        help="Also append the log to PATH, with time stamps (info, or debug with -v; even "
        "with -q).",
    )(func)
    func = click.option("-q", "--quiet", is_flag=True, help="Errors only on stderr.")(func)
    func = click.option(
        "-v", "--verbose", is_flag=True, help="Log the solver's iteration table on stderr."
    )(func)
    return func


def verbosity_level(verbose: bool, quiet: bool) -> int:
    return -1 if quiet else (1 if verbose else 0)
