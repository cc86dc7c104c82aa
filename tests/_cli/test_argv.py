"""Random argv for ``bpvideo separate`` (hypothesis): exit 0 or 2 with one error line, never
a traceback (issue 7)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bpvideo._cli import main
from bpvideo.settings import option_specs

_FLAGS = sorted(
    {(spec.flag or "--" + name.replace("_", "-")) for name, _, spec in option_specs()}
    | {spec.secondary for _, _, spec in option_specs() if spec.secondary}
    | {"--json", "-v", "-q", "-o", "--output", "--frobnicate", "-x", "--"}
)


_SAFE = string.ascii_letters + string.digits + "-._"


_token = st.one_of(
    st.sampled_from(_FLAGS),
    st.sampled_from(["0", "1", "-1", "2", "0.5", "1e9", "nan", "inf", "auto", "two", ""]),
    st.text(alphabet=_SAFE, max_size=8),  # never '/': no path outside the test folder
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**6), max_value=10**6).map(str),
)


@pytest.fixture(scope="module")
def cli_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("argv")


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(tokens=st.lists(_token, max_size=8), input_first=st.booleans())
def test_separate_argv_never_tracebacks(
    cli_dir: Path, tokens: list[str], input_first: bool
) -> None:
    """Random argv for ``separate`` with a missing INPUT (so no work runs): exit 0 (help)
    or 2, one error line, never a traceback, nothing written."""
    assume("--debug" not in tokens)
    missing = "no-such-input.mp4"
    argv = ["separate", missing, *tokens] if input_first else ["separate", *tokens, missing]
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(cli_dir)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        os.chdir(cwd)
    assert "Traceback" not in err.getvalue() and "internal error" not in err.getvalue()
    lines = err.getvalue().splitlines()
    if code == 1:
        # Several inputs (a stray token is an input too): each failure on its own line,
        # then the count; "exit 1 if any failed" (issue 5).
        assert re.fullmatch(r"bpvideo: (\d+) of \1 input\(s\) failed", lines[-1]), lines
        assert all(line.startswith("bpvideo: error: ") for line in lines[:-1]), lines
        assert len(lines) - 1 == int(lines[-1].split()[1]) and out.getvalue() == ""
    else:
        assert code in (0, 2), (argv, code, err.getvalue())
    if code == 2:
        assert len(lines) == 1 and lines[0].startswith("bpvideo: error: "), err.getvalue()
        assert out.getvalue() == ""
    assert list(cli_dir.iterdir()) == []  # nothing created
