"""KV offload tiers: reload time counted by hand, and when a reload beats recomputing the prefix."""

from __future__ import annotations

import pytest

from planner.core.errors import InputError
from planner.core.scenario import Scenario, resolve
from planner.techniques.kv_offload import get_tier, offload_report, reload_time_s

# Llama-3.1-8B, bf16 KV: 32 layers x 2 (K, V) x 8 KV heads x 128 x 2 bytes = 131,072 bytes per token
LLAMA8B_KV_BYTES_PER_TOKEN = 32 * 2 * 8 * 128 * 2


def test_pcie_gen5_link_rate_from_the_spec():
    # 32 GT/s x 16 lanes x 128/130 / 8 bits = 63.0 GB/s per direction
    assert get_tier("pcie5-cpu").bytes_per_s == pytest.approx(32e9 * 16 * 128 / 130 / 8, rel=0.001)
    assert get_tier("grace-c2c-cpu").bytes_per_s == 900e9 / 2  # NVLink-C2C: 900 GB/s both directions


def test_reload_time_by_hand():
    # 10,000 tokens x 131,072 B = 1.31072 GB; over PCIe Gen5 x16 (63.0 GB/s): 20.80 ms + 10 us = 20.81 ms;
    # over NVLink-C2C (450 GB/s): 2.913 ms + 5 us; from a Gen5 NVMe (14 GB/s): 93.62 ms + 100 us
    nbytes = 10_000 * LLAMA8B_KV_BYTES_PER_TOKEN
    assert nbytes == 1_310_720_000
    assert reload_time_s(10_000, LLAMA8B_KV_BYTES_PER_TOKEN, get_tier("pcie5-cpu")) == pytest.approx(0.02081, rel=1e-3)
    assert reload_time_s(10_000, LLAMA8B_KV_BYTES_PER_TOKEN, get_tier("grace-c2c-cpu")) == pytest.approx(
        0.002918, rel=1e-3
    )
    assert reload_time_s(10_000, LLAMA8B_KV_BYTES_PER_TOKEN, get_tier("nvme5-ssd")) == pytest.approx(0.09372, rel=1e-3)


def test_reloading_a_long_prefix_beats_recomputing_it_on_every_tier():
    # a 10,000-token prefill of Llama-3.1-8B on one H100 is ~2 x 8e9 x 1e4 = 1.6e14 FLOPs: a few hundred ms,
    # well above the 21 ms PCIe reload and the 94 ms NVMe one
    rows = {row.tier: row for row in offload_report(resolve(Scenario()), 10_000)}
    assert rows["pcie5-cpu"].reload_s == pytest.approx(0.02081, rel=1e-3)
    assert all(row.saved_s > 0 for row in rows.values())
    assert rows["grace-c2c-cpu"].saved_s > rows["pcie5-cpu"].saved_s > rows["nvme5-ssd"].saved_s


def test_unknown_tier_names_the_field():
    with pytest.raises(InputError) as err:
        get_tier("floppy")
    assert err.value.field == "kv_tier"
