"""Prints the differential suite's agreement table per language at the end of the run."""

from __future__ import annotations

import pytest

from tests.astgrep import test_realworld_cli


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    table = test_realworld_cli.agreement_table()
    if table:
        terminalreporter.write_sep("-", "ast-grep CLI agreement on the real-world corpus")
        terminalreporter.write_line(table)
