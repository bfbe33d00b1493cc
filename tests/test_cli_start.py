"""The CLI imports only the chosen subcommand: `memory` never loads pandas, numpy or the simulator; the lazy table
of subcommands matches what the modules register; `servingplan app` finds the app script."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import planner.cli as cli
from planner.cli.app_cmd import app_script

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "numpy", "planner.sim", "planner.batching", "planner.capacity", "planner.traffic")


# A fresh interpreter runs the CLI, then lists every module it imported (sys.modules: unlike -X importtime, this
# also sees the subcommand modules that importlib.import_module loads).
_LIST_IMPORTS = (
    "import sys\nfrom planner.cli import main\ntry:\n    sys.exit(main(sys.argv[1:]))\n"
    "finally:\n    print('MODULES', *sorted(sys.modules), file=sys.stderr)"
)


def imported_modules(*argv: str) -> set[str]:
    """Every module `servingplan ARGV` has imported by the time it exits."""
    proc = subprocess.run(
        [sys.executable, "-c", _LIST_IMPORTS, *argv], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    listing = next(line for line in proc.stderr.splitlines() if line.startswith("MODULES "))
    return set(listing.split()[1:])


def test_memory_imports_no_pandas_numpy_or_simulator():
    modules = imported_modules("memory", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "H100-SXM")
    assert "planner.cli.memory_cmd" in modules  # the parse is real: the subcommand ran
    heavy = sorted(m for m in modules if m.split(".")[0] in HEAVY or m.startswith(HEAVY))
    assert heavy == []
    assert not any(
        m.startswith("planner.cli.") and m.endswith("_cmd") and m != "planner.cli.memory_cmd" for m in modules
    )


def test_top_level_help_imports_no_subcommand():
    modules = imported_modules("--help")
    assert not any(m.endswith("_cmd") for m in modules)
    assert "planner.cli.walkthrough_cmd" in imported_modules("walkthrough", "--help")  # the listing sees them


def registered_by_modules() -> dict[str, tuple[str, str]]:
    """name → (module, help) from importing every *_cmd module, as an eager registry would."""
    found = {}
    for info in pkgutil.iter_modules(cli.__path__):
        if not info.name.endswith("_cmd"):
            continue
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"planner.cli.{info.name}").register(sub)
        helps = {a.dest: a.help for a in sub._choices_actions}
        found.update({name: (info.name, helps[name]) for name in sub.choices})
    return found


def test_command_table_matches_the_modules():
    assert cli.COMMANDS == registered_by_modules()


def test_help_lists_every_subcommand(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for name in cli.COMMANDS:
        assert name in out
    assert "usage: servingplan" in out


@pytest.mark.parametrize("name", ["tp", "lora", "recommend", "flash-attn"])
def test_second_parser_of_a_module_parses(name, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([name, "--help"])
    assert exit_info.value.code == 0
    assert f"usage: servingplan {name}" in capsys.readouterr().out


def test_engine_field_is_printed_as_its_flag(capsys):
    assert cli.main(["memory", "--tp", "3"]) == 2  # 32 heads: the engine raises on field tensor_parallel_size
    assert capsys.readouterr().err.startswith("error: --tp: Total number of attention heads (32)")


def test_app_script_is_the_checkout_app():
    assert app_script() == ROOT / "app.py"
