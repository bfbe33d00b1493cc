"""`servingplan app`: start the web app, from a checkout or an installed wheel, in any directory.

Runs `python -m streamlit run APP [streamlit options]` with this interpreter (exec'd in place on POSIX). APP is
`app.py` at the repository root in a checkout (or an editable install); an installed wheel carries app.py and app_pages/
as `ui/_app/` (setup.py maps them there), found without importing the UI. Options after `app` go to Streamlit,
e.g. `servingplan app --server.port 8600`.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from planner.core.errors import InputError

# The settings of .streamlit/config.toml, passed as options so that they hold from any directory (an installed
# wheel has no config file beside the user): no Deploy button, no gc.collect() after every run, no source watching,
# no usage statistics (Streamlit's default sends them to its servers; offline, every page load logged a console
# error for the failed request), uploads up to 200 MB (a trace).
SERVER_DEFAULTS = {
    "--browser.gatherUsageStats": "false",
    "--client.toolbarMode": "minimal",
    "--runner.postScriptGC": "false",
    "--server.fileWatcherType": "none",
    "--server.maxUploadSize": "200",  # MB: a trace; the small files' uploaders set their own (ui/uploads.py)
}


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "app",
        help="start the web app (Streamlit) in a browser",
        description="Start the Streamlit app. Arguments after `app` are passed to "
        "`streamlit run`, e.g. --server.port 8600 --server.headless true.",
    )
    p.set_defaults(func=run, passes_unknown_args=True)  # main hands every other argument to streamlit run


def app_script() -> Path:
    """The Streamlit entry script: the checkout's app.py, else the installed copy in ui/_app/."""
    checkout = Path(__file__).resolve().parents[2] / "app.py"
    if checkout.is_file() and (checkout.parent / "app_pages").is_dir():
        return checkout
    spec = importlib.util.find_spec("ui")  # a top-level lookup: finds the package without importing it
    if spec is not None and spec.submodule_search_locations:
        installed = Path(next(iter(spec.submodule_search_locations))) / "_app" / "app.py"
        if installed.is_file():
            return installed
    raise InputError("app", "cannot find app.py: reinstall servingplan (pip install .) or run from a checkout")


def streamlit_command(script: Path | str, options: list[str]) -> list[str]:
    """`python -m streamlit run SCRIPT` with this interpreter: SERVER_DEFAULTS for the flags `options` leaves unset,
    then `options` (`--flag=value` or `--flag value`)."""
    given = {a.split("=", 1)[0] for a in options if a.startswith("--")}
    defaults = [f"{flag}={value}" for flag, value in SERVER_DEFAULTS.items() if flag not in given]
    return [sys.executable, "-m", "streamlit", "run", str(script), *defaults, *options]


def local_server_options(port: int) -> list[str]:
    """A server for tests and benchmarks: headless on 127.0.0.1:PORT, no usage statistics."""
    return [
        "--server.headless=true",
        f"--server.port={port}",
        "--server.address=127.0.0.1",
        "--browser.gatherUsageStats=false",
    ]


def run(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("streamlit") is None:
        raise InputError("app", "Streamlit is not installed: pip install 'streamlit>=1.40,<2'")
    command = streamlit_command(app_script(), args.unknown_args)
    if os.name == "posix":  # become Streamlit: signals (Ctrl-C, a service manager's SIGTERM) reach the server itself
        os.execv(sys.executable, command)
    try:
        return subprocess.call(command)
    except KeyboardInterrupt:  # Ctrl-C stops Streamlit too; not an error
        return 0
