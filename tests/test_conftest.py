"""The suite's own guards: an ERROR logged unexpectedly fails a test."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]


@pytest.mark.expect_errors  # the inner run logs in this process
def test_an_unexpected_error_fails_and_a_marked_one_does_not(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(Path(__file__).with_name("conftest.py").read_text())
    pytester.makepyfile(
        """
        import logging
        import pytest

        def test_logs_error():
            logging.getLogger("bpvideo").error("boom")

        @pytest.mark.expect_errors
        def test_logs_expected_error():
            logging.getLogger("bpvideo").error("boom")

        def test_logs_warning():
            logging.getLogger("bpvideo").warning("fine")
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-o", "markers=expect_errors: x")
    # the call passes, the check after it fails the test (at its teardown)
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(
        ["*unexpected ERROR logged: bpvideo: boom*", "ERROR *::test_logs_error*"]
    )


def test_warnings_pass(no_unexpected_errors: logging.Handler) -> None:
    logging.getLogger("bpvideo").warning("a warning is not an error")
    assert no_unexpected_errors.records == []
