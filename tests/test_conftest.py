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


def test_a_signalled_child_gets_every_stop_signal_back() -> None:
    """Started from a test run that ignores SIGQUIT and SIGHUP (a background job of a
    shell, ``nohup``) and blocks SIGUSR1, a child made with ``default_signals`` still has
    the default action of each, unblocked: bpvideo then answers them (it kept them
    ignored, and test_signal_mid_solve[SIGQUIT] ran on for ever; issue 42)."""
    import signal
    import subprocess
    import sys

    from tests.conftest import default_signals

    def hostile_then_default() -> None:
        for signum in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
        default_signals()

    code = ("import signal; print([signal.getsignal(s) == signal.SIG_DFL for s in "
            "(signal.SIGQUIT, signal.SIGHUP, signal.SIGTERM)], "
            "signal.getsignal(signal.SIGINT) is signal.default_int_handler, "
            "sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          preexec_fn=hostile_then_default, check=True)  # fmt: skip
    assert done.stdout.split("\n")[0] == "[True, True, True] True []"
