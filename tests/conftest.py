"""Shared test setup: repo root on sys.path, and silence Streamlit's bare-mode warning."""
from __future__ import annotations

import logging
import sys
from pathlib import Path

pytest_plugins = ["browser_fixtures"]  # the live server and Chromium, shared by every browser test module

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


class _NoScriptRunContext(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "missing ScriptRunContext" not in record.getMessage()


for _name in ("streamlit", "streamlit.runtime.scriptrunner_utils.script_run_context",
              "streamlit.runtime.scriptrunner.script_run_context"):
    logging.getLogger(_name).addFilter(_NoScriptRunContext())
