"""Error messages: library words, flags on the command line, the option they are about."""

from __future__ import annotations

import pytest

from bpvideo.errors import BpvideoError, InputError, WorkError, literal
from bpvideo.settings import cli_flags


def test_template_fields() -> None:
    error = InputError(
        "{rank=} must be < 5: lower {rank}, or use {window='auto'}; {gray=False}; {{x}}",
        option=("rank", 7),
    )
    assert (
        error.message
        == str(error)
        == ("rank=7 must be < 5: lower rank, or use window='auto'; gray=False; {x}")
    )
    assert error.render(cli_flags()) == (
        "--rank 7 must be < 5: lower --rank, or use --window auto; --color; {x}"
    )
    assert error.option == ("rank", 7) and error.exit_code == 2
    assert isinstance(error, ValueError) and isinstance(error, BpvideoError)


def test_plain_messages_are_literal() -> None:
    error = WorkError("out/{stem}: {rank} is not a field here")
    assert error.render(cli_flags()) == error.message == "out/{stem}: {rank} is not a field here"
    assert error.exit_code == 1 and not isinstance(error, ValueError)


def test_within_keeps_the_option_and_quotes_the_prefix() -> None:
    error = InputError("{rank=} must be >= 1", option=("rank", 0)).within("cams/{a}.mp4")
    assert error.message == "cams/{a}.mp4: rank=0 must be >= 1" and error.option == ("rank", 0)
    assert error.render({"rank": "--rank"}) == "cams/{a}.mp4: --rank 0 must be >= 1"
    plain = InputError("the input has 1 frame(s)").within(
        "x.mp4", " (or lower {overlap})", option=("window", 40)
    )
    assert plain.render({"overlap": "--overlap"}) == (
        "x.mp4: the input has 1 frame(s) (or lower --overlap)"
    )
    assert literal("a{b}") == "a{{b}}"


def test_strings_are_quoted_as_given() -> None:
    error = InputError("{threshold=} must be a number", option=("threshold", "high"))
    assert error.message == "threshold='high' must be a number"
    assert error.render(cli_flags()) == "--threshold 'high' must be a number"
    with pytest.raises(ValueError, match="threshold='high'"):
        raise error
