"""The package is self-contained: every data file ships in the wheel, the data folder resolves in a checkout and
when installed, the dependencies live only in pyproject.toml, and `servingplan app` runs Streamlit on the app."""

from __future__ import annotations

import ast
import fnmatch
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT

from planner.cli import app_cmd, main
from planner.core import paths


def setup_value(name: str):
    """A module-level constant of setup.py, read without running setup()."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"setup.py defines no {name}")


def shipped(relative: str, patterns: list[str]) -> bool:
    """setuptools package_data semantics: a pattern is a glob relative to the package folder; * stays in a folder."""
    return any(fnmatch.fnmatch(relative, p) and relative.count("/") == p.count("/") for p in patterns)


def test_every_data_file_ships_in_the_wheel():
    patterns = setup_value("DATA_FILES")
    files = [p.relative_to(ROOT / "data").as_posix() for p in (ROOT / "data").rglob("*") if p.is_file()]
    assert len(files) > 25  # catalogues, 19 presets, traces, measurements
    missing = [f for f in files if not shipped(f, patterns)]
    assert missing == [], f"add a pattern to DATA_FILES in setup.py for: {missing}"


def test_the_checkout_uses_its_own_data(monkeypatch):
    monkeypatch.delenv("SERVINGPLAN_DATA_DIR", raising=False)
    assert not (ROOT / "planner" / "_data").exists()  # only a wheel has it
    assert paths.data_dir() == ROOT / "data"
    assert paths.published_points_csv() == ROOT / "data" / "measurements" / "published_points.csv"


def test_an_installed_copy_is_preferred(monkeypatch, tmp_path):
    monkeypatch.delenv("SERVINGPLAN_DATA_DIR", raising=False)
    monkeypatch.setattr(paths, "_INSTALLED_DATA", tmp_path)
    assert paths.data_dir() == tmp_path
    monkeypatch.setenv("SERVINGPLAN_DATA_DIR", str(tmp_path / "mine"))
    assert paths.data_dir() == tmp_path / "mine"  # the user's override wins


def test_dependencies_are_listed_once():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["build-system"]["build-backend"] == "setuptools.build_meta"
    runtime = {d.split(">")[0].split("<")[0].lower() for d in project["project"]["dependencies"]}
    assert {"streamlit", "pandas", "numpy", "plotly", "pydantic", "pyyaml", "kaleido"} <= runtime
    for name, line in (("requirements.txt", "-e ."), ("requirements-dev.txt", "-e .[dev]")):
        lines = [ln.split("#")[0].strip() for ln in (ROOT / name).read_text(encoding="utf-8").splitlines()]
        assert [ln for ln in lines if ln] == [line]


def test_readme_setup_installs_the_package():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = readme.split("```")[1].splitlines()[1:]
    assert "pip install -e ." in first_block[0] and "servingplan app" in first_block[0]
    assert "pip install -e '.[dev]'" in first_block[1] and "python -m pytest" in first_block[1]


def test_app_runs_streamlit_on_the_app_script(monkeypatch):
    calls = []

    def exec_or_call(*args):  # os.execv(path, argv) never returns; subprocess.call(argv) returns the exit code
        calls.append(args[-1])
        raise SystemExit(0)

    monkeypatch.setattr(app_cmd.os, "execv", exec_or_call)
    monkeypatch.setattr(app_cmd.subprocess, "call", exec_or_call)
    with pytest.raises(SystemExit):
        main(["app", "--server.port", "8600", "--server.headless", "true"])
    assert calls == [
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(ROOT / "app.py"),
            "--browser.gatherUsageStats=false",  # the server defaults of .streamlit/config.toml, from any directory
            "--client.toolbarMode=minimal",
            "--runner.postScriptGC=false",
            "--server.fileWatcherType=none",
            "--server.maxUploadSize=200",
            "--server.port",
            "8600",
            "--server.headless",
            "true",
        ]
    ]


def test_unknown_options_still_fail_elsewhere(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["memory", "--server.port", "8600"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: --server.port 8600" in capsys.readouterr().err


def test_app_script_found_in_an_installed_layout(monkeypatch, tmp_path):
    (tmp_path / "ui" / "_app" / "app_pages").mkdir(parents=True)
    (tmp_path / "ui" / "__init__.py").write_text("")
    (tmp_path / "ui" / "_app" / "app.py").write_text("")
    monkeypatch.setattr(app_cmd, "__file__", str(tmp_path / "planner" / "cli" / "app_cmd.py"))  # no checkout
    monkeypatch.setattr(
        app_cmd.importlib.util,
        "find_spec",
        lambda name: type("Spec", (), {"submodule_search_locations": [str(tmp_path / "ui")]}),
    )
    assert app_cmd.app_script() == tmp_path / "ui" / "_app" / "app.py"
    assert Path(app_cmd.app_script()).parent.name == "_app"


def test_app_options_given_by_the_user_win_over_the_defaults(monkeypatch):
    calls = []

    def exec_or_call(*args):
        calls.append(args[-1])
        raise SystemExit(0)

    monkeypatch.setattr(app_cmd.os, "execv", exec_or_call)
    monkeypatch.setattr(app_cmd.subprocess, "call", exec_or_call)
    with pytest.raises(SystemExit):
        main(["app", "--server.fileWatcherType=auto"])
    argv = calls[0]
    assert "--server.fileWatcherType=auto" in argv and "--server.fileWatcherType=none" not in argv
    assert "--runner.postScriptGC=false" in argv


def test_tests_and_benchmarks_start_the_server_servingplan_app_starts():
    # tests/browser_fixtures.py and benchmarks/bench_app_sessions.py build their command with the same helper
    argv = app_cmd.streamlit_command("app.py", app_cmd.local_server_options(8123))
    assert argv[:5] == [sys.executable, "-m", "streamlit", "run", "app.py"]
    assert set(argv[5:]) == {
        "--client.toolbarMode=minimal",
        "--runner.postScriptGC=false",
        "--server.fileWatcherType=none",
        "--server.maxUploadSize=200",
        "--server.headless=true",
        "--server.port=8123",
        "--server.address=127.0.0.1",
        "--browser.gatherUsageStats=false",
    }
