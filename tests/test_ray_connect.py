"""Ray without a cluster: `--ray auto`, a stale cluster file or a dead address is one line within a bounded
connect (no ray.init retries); `--ray local` starts its own instance (address "local", a private temp dir) and
removes it, never joining another cluster (issue 22 item 11). No Ray cluster is started here."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from planner.capacity import ray_cluster
from planner.cli import main
from planner.core.errors import InputError

ray = pytest.importorskip("ray")
ARGV = ["recommend", "--gpus", "H100-SXM", "--tps", "1", "--target-rate", "5", "--ray"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket closes


@pytest.fixture
def no_init(monkeypatch):
    """ray.init must not be reached: the address check fails first."""
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kw: pytest.fail(f"ray.init reached with {kw}"))


def test_stale_cluster_file_is_one_line_naming_it(tmp_path, monkeypatch, capsys, no_init):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "ray_current_cluster").write_text(f"127.0.0.1:{_closed_port()}\n")
    assert main([*ARGV, "auto"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: --ray: no Ray cluster answers at 127.0.0.1:"), err
    assert "ray_current_cluster" in err and "stale" in err


def test_auto_without_any_cluster_is_one_line(tmp_path, monkeypatch, capsys, no_init):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))  # no cluster file there
    assert main([*ARGV, "auto"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"error: --ray: cannot join Ray at 'auto': no running cluster found (no RAY_ADDRESS, no "
        f"{tmp_path / 'ray' / 'ray_current_cluster'}); start one with `ray start --head`, or use --ray local"
    )


@pytest.mark.parametrize("address", ["127.0.0.1:{port}", "ray://127.0.0.1:{port}", "nonsense", "host:99999"])
def test_a_dead_or_malformed_address_is_one_line(address, capsys, no_init):
    assert main([*ARGV, address.format(port=_closed_port())]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: --ray: "), err


def test_ray_address_env_is_what_auto_checks(monkeypatch):
    port = _closed_port()
    monkeypatch.setenv("RAY_ADDRESS", f"ray://127.0.0.1:{port}")
    assert ray_cluster.resolve_address("auto") == (f"127.0.0.1:{port}", "RAY_ADDRESS")


def test_local_starts_its_own_instance_in_a_private_dir_and_removes_it(monkeypatch):
    calls = {}
    state = {"up": False}

    def fake_init(**kw):
        calls.update(kw)
        assert Path(kw["_temp_dir"]).is_dir()
        state["up"] = True

    monkeypatch.setattr(ray, "is_initialized", lambda: state["up"])
    monkeypatch.setattr(ray, "init", fake_init)
    monkeypatch.setattr(ray, "shutdown", lambda: state.update(up=False))
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")  # what ray.init() without an address would join
    with ray_cluster.ray_session("local", pythonpath="/x"):
        assert state["up"]
    assert calls["address"] == "local"  # Ray's "start a new instance even if one runs"
    assert Path(calls["_temp_dir"]).name.startswith("servingplan-ray-") and not Path(calls["_temp_dir"]).exists()
    assert not state["up"]


def test_an_auth_refusal_names_the_token(monkeypatch):
    def refuse(**kw):
        raise ConnectionError("UNAUTHENTICATED: Invalid or missing authentication token")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", refuse)
    monkeypatch.setattr(ray_cluster, "check_reachable", lambda *a: None)
    with pytest.raises(InputError) as err, ray_cluster.ray_session("10.0.0.1:6379", pythonpath="/x"):
        pass
    assert "RAY_AUTH_TOKEN" in err.value.message and "ray get-auth-token" in err.value.message
