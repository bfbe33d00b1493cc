"""The README's quick examples run as written from any directory (here: an empty temporary one)."""

from __future__ import annotations

import shlex
import subprocess
import sys

from conftest import ROOT


def _lines(starts: tuple[str, ...]) -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return [ln.split("   #")[0].strip() for ln in readme.splitlines() if ln.startswith(starts)]


def _run(line: str, cwd) -> subprocess.CompletedProcess:
    """One README line, without a shell: `servingplan` is this interpreter's `-m planner`; `> FILE` writes stdout."""
    argv = shlex.split(line)
    target = None
    if ">" in argv:
        argv, target = argv[: argv.index(">")], argv[argv.index(">") + 1]
    if argv[0] == "servingplan":
        argv = [sys.executable, "-m", "planner", *argv[1:]]
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120, env=env)
    if target:
        (cwd / target).write_text(done.stdout)
    return done


def test_validate_and_batching_examples_run_outside_the_repository(tmp_path):
    lines = _lines(("printf ", "servingplan batching")) + _lines(("servingplan validate --json",))
    assert len(lines) == 3, lines
    for line in lines:
        done = _run(line, tmp_path)
        assert done.returncode == 0, (line, done.stderr[-500:])


def test_help_text_has_no_doubled_percent():
    done = _run("servingplan validate --help", ROOT)
    assert done.returncode == 0 and "%%" not in done.stdout and "% error" in done.stdout


def test_a_model_too_big_for_the_gpu_blames_the_gpu_not_the_utilisation(tmp_path):
    done = _run("servingplan capacity --model deepseek-ai/DeepSeek-V3 --gpu L4 --target-rate 1", tmp_path)
    assert done.returncode == 2
    line = done.stderr.strip().splitlines()[-1]
    assert line.lower().startswith("error: --gpu:") and "--gpu-memory-utilization" not in line  # was blamed
    assert "memory page" not in line and "servingplan memory" in line
