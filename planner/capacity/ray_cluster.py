"""Joining or starting Ray for the ranking (`recommend --ray`), with one-line errors and no hang.

- `--ray local` starts a private Ray instance: `ray.init(address="local")` in a fresh temp directory, shut down
  and removed after the ranking. Ray's own default (no address) joins the latest cluster it finds in
  /tmp/ray/ray_current_cluster, which may be another user's or a dead one (the hang of issue 22 item 11).
- `--ray auto` / `--ray HOST:PORT` / `--ray ray://HOST:PORT` join a running cluster. Before ray.init, the address
  (for auto: RAY_ADDRESS, else the cluster file, as Ray resolves it) must accept a TCP connection within
  CONNECT_TIMEOUT_S: a stale cluster file or a wrong port is one line, not ray.init's minutes of retries.
- Token authentication (Ray >= 2.52, on by default for local clusters since 2.59 and for all since 2.61; see
  https://docs.ray.io/en/latest/ray-security/token-auth.html): the driver reads the cluster's token from
  RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or Ray's default token file; a refused token is named in the error.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from planner.core.errors import InputError

CONNECT_TIMEOUT_S = 5.0
FIELD = "ray_address"
AUTH_HINT = (
    "the cluster uses token authentication: export RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH) with its token "
    "(`ray get-auth-token` on the head node) and RAY_AUTH_MODE=token"
)


def cluster_file() -> Path:
    """Where `ray start --head` records the latest cluster's address (Ray's temp dir: RAY_TMPDIR or the system's)."""
    return Path(os.environ.get("RAY_TMPDIR") or tempfile.gettempdir()) / "ray" / "ray_current_cluster"


def resolve_address(address: str) -> tuple[str, str]:
    """(host:port to check, where it came from) for a join address; InputError when auto finds no cluster."""
    if address == "auto":
        if os.environ.get("RAY_ADDRESS"):
            return os.environ["RAY_ADDRESS"].removeprefix("ray://"), "RAY_ADDRESS"
        path = cluster_file()
        try:
            recorded = path.read_text(encoding="utf-8", errors="replace").strip()[:200]
        except OSError:
            recorded = ""
        if not recorded:
            raise InputError(
                FIELD,
                "cannot join Ray at 'auto': no running cluster found (no RAY_ADDRESS, no "
                f"{path}); start one with `ray start --head`, or use --ray local",
            )
        return recorded, str(path)
    return address.removeprefix("ray://"), "--ray"


def check_reachable(host_port: str, source: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """InputError unless host:port accepts a TCP connection within timeout_s."""
    host, _, port = host_port.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(FIELD, f"{host_port[:80]!r} (from {source}) is not HOST:PORT")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return
    except OSError as err:
        from_file = source.endswith("ray_current_cluster")
        stale = " (a stale cluster file? remove it or start the cluster)" if from_file else ""
        raise InputError(
            FIELD,
            f"no Ray cluster answers at {host_port[:80]} (from {source}){stale}: {type(err).__name__}: "
            f"{str(err)[:80] or 'no answer'} within {timeout_s:g} s",
        ) from None


def _init_error(address: str, err: Exception) -> InputError:
    text = " ".join(str(err).split()) or type(err).__name__
    hint = (
        AUTH_HINT
        if any(w in text.lower() for w in ("auth", "token", "unauthenticated"))
        else ("start one with `ray start --head`, or use --ray local")
    )
    return InputError(FIELD, f"cannot join Ray at {address[:80]!r} ({text[:160]}); {hint}")


@contextmanager
def ray_session(address: str, pythonpath: str) -> Iterator[object]:
    """The `ray` module, initialised for `address` (see the module note); a local instance is shut down after."""
    try:
        import ray
    except ImportError:
        raise InputError(FIELD, "Ray is not installed: pip install '.[cluster]' (ray>=2.9)") from None
    if ray.is_initialized():  # a caller's own session (tests, notebooks): used as it is
        yield ray
        return
    options = dict(runtime_env={"env_vars": {"PYTHONPATH": pythonpath}}, include_dashboard=False, log_to_driver=False)
    temp_dir = None
    if address == "local":
        temp_dir = tempfile.mkdtemp(prefix="servingplan-ray-")  # short: Ray's socket paths must fit 107 bytes
        options |= dict(address="local", _temp_dir=temp_dir)
    else:
        check_reachable(*resolve_address(address))
        options["address"] = address
    try:
        try:
            ray.init(**options)
        except (ConnectionError, TimeoutError, ValueError, RuntimeError, PermissionError) as err:
            raise _init_error(address, err) from None
        yield ray
    finally:
        if temp_dir is not None:
            if ray.is_initialized():
                ray.shutdown()
            shutil.rmtree(temp_dir, ignore_errors=True)
