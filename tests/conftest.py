"""Shared test setup: the browser fixtures, and silence Streamlit's bare-mode warning.

The repository root is on sys.path through pytest's `pythonpath` setting (pyproject.toml), so tests import this
checkout's code, and `benchmarks` and `scripts` as packages of it."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from hypothesis import settings

pytest_plugins = ["browser_fixtures"]  # the live server and Chromium, shared by every browser test module

ROOT = Path(__file__).resolve().parents[1]  # the repository root, for tests that open its files

# Property tests draw the same examples on every run: a CI run must not pass or fail on a search's luck (a walkthrough
# overflow surfaced that way). HYPOTHESIS_PROFILE=hunt searches afresh.
settings.register_profile("ci", derandomize=True)
settings.register_profile("hunt", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


class _NoScriptRunContext(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "missing ScriptRunContext" not in record.getMessage()


for _name in (
    "streamlit",
    "streamlit.runtime.scriptrunner_utils.script_run_context",
    "streamlit.runtime.scriptrunner.script_run_context",
):
    logging.getLogger(_name).addFilter(_NoScriptRunContext())


# The simulator checks its state invariants at every step in the tests (planner/sim/invariants.py).
import planner.sim.invariants  # noqa: E402

planner.sim.invariants.ENABLED = True
