"""KV offload on `simulate` and `fleet` (planner/sim/offload_plan.py): sizes by hand, the engines' own flags, the
`offload` JSON key, bad input naming the flag."""

from __future__ import annotations

import json

import pytest

from planner.capacity.offload_compare import OffloadSide, _verdict
from planner.cli import main
from planner.core.scenario import Scenario, resolve
from planner.sim.offload_plan import KVOffload, engine_flags, offload_config

SESSIONS = (
    "--model meta-llama/Llama-3.1-8B --gpu-memory-utilization 0.3 --rate 0.5 --turns 4 --system-prompt-tokens 1000 "
    "--first-input-tokens 3000 --input-tokens 200 --output-tokens 100 --think-time 30 --num-requests 160"
)


def _json(command: str, capsys) -> dict:
    assert main([*command.split(), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_tier_sizes_and_links_by_hand():
    r = resolve(Scenario(model="meta-llama/Llama-3.1-8B", gpu="H100-SXM"))
    # 131,072 B per token x 16 tokens = 2,097,152 B per block; 2 GiB / 2 MiB = 1,024 blocks
    cfg = offload_config(r, KVOffload("cpu", cpu_bytes=2 * 2**30), num_gpu_blocks=5000)
    assert (cfg.cpu_blocks, cfg.block_bytes_per_gpu) == (1024, 2_097_152)
    assert cfg.cpu_bytes_per_s == 55.63e9  # H100-SXM sits on hgx-pcie5: PCIe Gen5 x16 as measured
    assert offload_config(r, KVOffload("cpu"), 5000).cpu_blocks == 10_000  # default: 2 x the GPU pool
    # cpu+ssd on the host's NVMe share: 3.84 TB / 2,097,152 B = 1,831,054 blocks over Gen4 NVMe at 6.8 GB/s
    ssd = offload_config(r, KVOffload("cpu+ssd"), 5000)
    assert (ssd.ssd_blocks, ssd.ssd_bytes_per_s) == (1_831_054, 6.8e9)
    assert '"cpu_bytes_to_use":2147483648' in engine_flags(r, cfg)
    gb = resolve(Scenario(model="meta-llama/Llama-3.1-8B", gpu="GB200"))
    assert offload_config(gb, KVOffload("cpu"), 5000).cpu_bytes_per_s == 375e9  # NVLink-C2C as measured


def test_simulate_json_adds_offload_with_hit_rates_per_tier_that_add_up(capsys):
    off = _json(f"simulate {SESSIONS}", capsys)
    on = _json(f"simulate {SESSIONS} --kv-offload cpu --cpu-offload-gib 64", capsys)
    assert off["offload"] is None
    o = on["offload"]
    assert sum(o["hit_rate"].values()) == pytest.approx(on["prefix_hit_rate"])
    assert o["hit_rate"]["cpu"] > 0 and on["prefix_hit_rate"] > off["prefix_hit_rate"]
    assert o["cpu_gib"] == pytest.approx(64.0, abs=0.01) and o["reload_s"] > 0
    assert "OffloadingConnector" in o["engine_flags"]


def test_sglang_hicache_flags_and_write_back(capsys):
    out = _json(f"simulate {SESSIONS} --engine sglang --kv-offload cpu+ssd --hicache-write-policy write_back", capsys)
    flags = out["offload"]["engine_flags"]
    assert "--enable-hierarchical-cache" in flags and "--hicache-write-policy write_back" in flags
    assert "--hicache-storage-backend" in flags and "ssd" in out["offload"]["hit_rate"]


def test_fleet_json_adds_offload(capsys):
    out = _json(f"fleet {SESSIONS} --replicas 2 --router prefix-aware --kv-offload cpu", capsys)
    assert out["offload"]["hit_rate"]["cpu"] >= 0 and out["offload"]["num_reloads"] >= 0


@pytest.mark.parametrize(
    "extra, flag",
    [
        ("--cpu-offload-gib 8", "--kv-offload"),
        ("--kv-offload cpu --cpu-offload-gib -1", "--cpu-offload-gib"),
        ("--kv-offload cpu --offload-host nowhere", "--offload-host"),
        ("--kv-offload cpu --hicache-write-policy write_back", "--hicache-write-policy"),  # vLLM writes through
        ("--kv-offload cpu --engine tensorrt-llm", "--kv-offload"),
    ],
)
def test_bad_offload_input_names_the_flag(extra, flag, capsys):
    assert main(["simulate", *SESSIONS.split(), *extra.split()]) == 2
    err = capsys.readouterr().err
    assert flag in err and "Traceback" not in err


def _side(on: bool, replicas, usd, hit):
    return OffloadSide(on, replicas, usd, 1.0, 1.0 if on else 1.5, hit, hit / 2 if on else 0.0)


def test_offload_pays_when_it_saves_replicas_and_says_so():
    # 7 replicas at $2.69/hour each without offload, 5 with it: 2 fewer, $5.38/hour less
    pays = _verdict(_side(False, 7, 18.83, 0.3), _side(True, 5, 13.45, 0.6))
    assert pays[:3] == (2, pytest.approx(5.38), True) and "2 fewer replicas" in pays[3]
    same = _verdict(_side(False, 7, 18.83, 0.3), _side(True, 7, 18.83, 0.6))
    assert same[:3] == (0, 0.0, False) and "1,500 → 1,000 ms" in same[3]
    costs = _verdict(_side(False, 5, 13.45, 0.3), _side(True, 6, 16.14, 0.3))
    assert costs[2] is False and "costs 1 more replicas" in costs[3]


def test_capacity_json_adds_offload_on_against_off(capsys):
    out = _json(
        "capacity --profile rag --target-rate 1 --num-requests 200 --slo-ttft-p95 8 --kv-offload cpu "
        "--cpu-offload-gib 256",
        capsys,
    )
    o = out["offload"]
    assert (o["off"]["offload"], o["on"]["offload"]) == (False, True)
    assert o["on"]["prefix_hit_rate"] >= o["off"]["prefix_hit_rate"]
    assert o["pays"] == (o["replicas_saved"] is not None and o["replicas_saved"] > 0)
    assert out["replicas"] == o["on"]["replicas"]  # the plan printed is the one with offload


def test_simulate_text_says_what_the_tiers_did(capsys):
    assert main(["simulate", *SESSIONS.split(), "--kv-offload", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "KV offload cpu on hgx-pcie5 (write_through" in out and "engine flags: --kv-transfer-config" in out
