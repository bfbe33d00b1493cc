"""The KV offload flags of `simulate`, `fleet` and `capacity`, and the `offload` key and line they report
(planner/sim/offload_plan.py)."""

from __future__ import annotations

import argparse

from planner.core.errors import InputError
from planner.sim.offload_plan import GIB, OFFLOAD_TIERS, KVOffload, offload_summary


def add_offload_args(p: argparse.ArgumentParser) -> None:
    """KV offload tiers (planner/sim/offload_plan.py): vLLM's OffloadingConnector or SGLang's HiCache."""
    o = p.add_argument_group("KV offload (off unless --kv-offload; vLLM OffloadingConnector, SGLang HiCache)")
    o.add_argument(
        "--kv-offload",
        choices=OFFLOAD_TIERS,
        default=None,
        help="keep prefix blocks the GPU evicts in CPU memory (and on NVMe SSD); hits reload over the host link",
    )
    o.add_argument(
        "--cpu-offload-gib",
        type=float,
        default=None,
        help="CPU tier for the whole replica, GiB (vLLM cpu_bytes_to_use; default: 2 x the GPU KV pool, SGLang's "
        "--hicache-ratio default)",
    )
    o.add_argument("--ssd-offload-gib", type=float, default=None, help="SSD tier, GiB (default: the host's NVMe share)")
    o.add_argument("--offload-host", default=None, help="host of data/hosts.yaml (default: the GPU's)")
    o.add_argument(
        "--hicache-write-policy",
        choices=("write_through", "write_back"),
        default=None,
        help="SGLang: back blocks up as computed (write_through, the default) or as the GPU evicts them",
    )


def offload_from_args(args: argparse.Namespace) -> KVOffload | None:
    if getattr(args, "kv_offload", None) is None:
        if any(getattr(args, f, None) is not None for f in ("cpu_offload_gib", "ssd_offload_gib", "offload_host")):
            raise InputError("--kv-offload", "the offload sizes and host need --kv-offload cpu or cpu+ssd")
        return None
    gib = lambda v: v * GIB if v is not None else None  # noqa: E731
    return KVOffload(
        args.kv_offload,
        gib(args.cpu_offload_gib),
        gib(args.ssd_offload_gib),
        args.offload_host,
        args.hicache_write_policy,
    )


def offload_json(r, replica, res) -> dict | None:
    """The `offload` key: the tiers' hit rates and reload seconds (None when offload is off)."""
    kv = replica.settings.offload
    if kv is None or res.offload is None:
        return None
    return offload_summary(r, kv, replica.scheduler_config.offload, res).to_dict()


def offload_text(o: dict | None) -> str:
    """One line on the offload tiers (nothing when off)."""
    if o is None:
        return ""
    rates = ", ".join(f"{tier} {rate:.1%}" for tier, rate in o["hit_rate"].items())
    return (
        f"\n  KV offload {o['tiers']} on {o['host']} ({o['write_policy']}, CPU {o['cpu_gib']:,.1f} GiB): hits {rates}; "
        f"{o['num_reloads']:,} reloads, {o['reload_s']:,.2f} s charged to steps\n  engine flags: {o['engine_flags']}"
    )
