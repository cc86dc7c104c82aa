"""The one options table: values checked by it (any input either works or fails with the
tool's own error type, never another exception), spellings, and the low-level functions'
defaults taken from it."""

from __future__ import annotations

import inspect
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpvideo.errors import InputError
from bpvideo.masks import foreground_masks, sample_model
from bpvideo.settings import (
    SeparateSettings,
    check_value,
    cli_flags,
    default,
    option_name,
    option_specs,
    parse_span,
)
from bpvideo.solvers import best_pair, initial_point

SPECS = {name: spec for name, _, spec in option_specs()}
NAMES = sorted(SPECS)

# Values as they come from YAML or Python: every JSON-like type, and numbers at the edges.
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["auto", "AUTO", " auto ", "1e-1", "0x10", "nan", "-inf", "", "2", "1.5"]),
    st.text(max_size=12),
)
values = st.one_of(scalars, st.lists(scalars, max_size=3), st.dictionaries(st.text(), scalars))


@settings(max_examples=400, deadline=None)
@given(name=st.sampled_from(NAMES), value=values)
def test_check_value_works_or_raises_input_error(name: str, value: object) -> None:
    spec = SPECS[name]
    try:
        checked = check_value(name, spec, value)
    except InputError as exc:
        assert "\n" not in exc.message and exc.message.startswith(f"{name}=")  # library words
        assert exc.option is not None and exc.option[0] == name and isinstance(exc, ValueError)
        return
    # A value that passed is of the option's type, within its bounds, and passes again.
    assert check_value(name, spec, checked) == checked
    if spec.kind == "int" and checked is not None:
        assert type(checked) is int
    if spec.kind == "float" and checked is not None:
        assert type(checked) is float and np.isfinite(checked)
    if spec.choices is not None:
        assert checked in spec.choices


@settings(max_examples=200, deadline=None)
@given(
    mapping=st.dictionaries(
        st.one_of(st.sampled_from(NAMES), st.text(max_size=8)), values, max_size=6
    )
)
def test_settings_from_mapping_works_or_raises_input_error(mapping: dict) -> None:
    try:
        s = SeparateSettings.from_mapping(mapping)
    except InputError:
        return
    # keys are option names or their flags' spellings (max-iter), each naming a field
    assert {option_name(key) for key in mapping} <= {f.name for f in fields(SeparateSettings)}
    assert SeparateSettings.from_mapping(s.to_dict()) == s  # round trip


# --- command-line parsing ----------------------------------------------------------------


# --- projections -------------------------------------------------------------------------


def test_low_level_defaults_are_the_tables() -> None:
    """best_pair and foreground_masks default to what the CLI does (no second set)."""
    table = {name: value for name, value, _ in option_specs()}
    solver = inspect.signature(best_pair).parameters
    for name in ("gamma", "a", "b", "max_iter", "tol", "init", "sweeps"):
        assert solver[name].default == table[name], name
    assert (solver["tol"].default, solver["sweeps"].default) == (1e-3, 1)
    assert inspect.signature(initial_point).parameters["init"].default == table["init"]
    masks = inspect.signature(foreground_masks).parameters
    for param, name in (("rule", "mask_rule"), ("threshold", "threshold"),
                        ("threshold_k", "threshold_k"), ("noise", "noise"),
                        ("shadows", "shadows"), ("open_radius", "open_radius"),
                        ("close_radius", "close_radius"), ("min_area", "min_area")):  # fmt: skip
        assert masks[param].default == table[name], param
    assert (masks["threshold_k"].default, masks["close_radius"].default) == (6.0, 3)
    assert masks["min_area"].default == 25
    assert inspect.signature(sample_model).parameters["threshold_k"].default == 6.0
    assert default("rank") == 2 and default("solve_scale") == "auto"


def test_spellings_of_an_option() -> None:
    assert option_name("inertia_a") == option_name("inertia-a") == option_name("a") == "a"
    assert option_name("max-iter") == option_name("max_iter") == "max_iter"
    assert option_name("rnak") is None and option_name(3) is None
    settings = SeparateSettings.from_mapping({"inertia_a": 0.3, "max-iter": 7})
    assert (settings.a, settings.max_iter) == (0.3, 7)
    with pytest.raises(InputError, match=r"unknown option\(s\): rnak .*did you mean 'rank'"):
        SeparateSettings.from_mapping({"rnak": 2})
    with pytest.raises(InputError, match="given twice"):
        SeparateSettings.from_mapping({"a": 0.2, "inertia_a": 0.3})
    # pathlib.Path where a path goes, as Python callers write it (was "must be a string").
    settings = SeparateSettings.from_mapping({"mask": Path("m.png"), "roi": [Path("r.png")]})
    assert (settings.mask, settings.roi) == ("m.png", ("r.png",))
    flags = cli_flags()
    assert flags["a"] == "--inertia-a" and flags["gray"] == "--gray/--color"
    assert flags["max_iter"] == "--max-iter" and flags["output"] == "-o"


def test_errors_in_library_words_and_as_flags() -> None:
    with pytest.raises(InputError) as info:
        SeparateSettings.from_mapping({"rank": 0})
    error = info.value
    assert str(error) == "rank=0 must be >= 1" and error.option == ("rank", 0)
    assert error.rule == "must be >= 1" and isinstance(error, ValueError)
    assert error.render(cli_flags()) == "--rank 0 must be >= 1"
    with pytest.raises(InputError) as info:
        SeparateSettings.from_mapping({"window": 10, "overlap": 20})
    assert str(info.value) == "overlap=20 must be < window (10): lower overlap"
    assert info.value.render(cli_flags()) == "--overlap 20 must be < --window (10): lower --overlap"
    with pytest.raises(InputError) as info:
        SeparateSettings.from_mapping({"mask": "m.png", "observe": 0.5})
    assert info.value.render(cli_flags()) == "--mask and --observe cannot be combined: choose one"
    # An array where a path goes: one line naming it, not numpy's repr of many lines.
    with pytest.raises(InputError) as info:
        SeparateSettings.from_mapping({"roi": np.ones((36, 48), bool)})
    assert str(info.value).startswith("roi=<bool array of shape (36, 48)> must be a polygon")
    with pytest.raises(InputError, match=r"^mask=<uint8 array .* must be a path$"):
        SeparateSettings.from_mapping({"mask": np.ones((36, 48), np.uint8)})


def test_learn_span() -> None:
    assert parse_span("0:200") == (0, 200) and parse_span("10:") == (10, None)
    assert SeparateSettings.from_mapping({"learn": (5, 50)}).learn == "5:50"
    for bad in ("5", "a:b", "10:11", "-1:5"):
        with pytest.raises(InputError, match="learn="):
            SeparateSettings.from_mapping({"learn": bad})
    with pytest.raises(InputError, match="mask_rule='support' needs the solved sparse part"):
        SeparateSettings.from_mapping({"learn": "0:50", "mask_rule": "support"})
    with pytest.raises(InputError, match="observe cannot be combined with learn"):
        SeparateSettings.from_mapping({"learn_from": "x.mp4", "observe": 0.5})
