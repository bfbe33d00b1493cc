"""Catalogues: every required entry present, every figure sourced, bad entries named by file, entry and field."""

from __future__ import annotations

import pytest

from planner.core.catalog import get_gpu, gpus, kv_precisions, load_gpus, weight_precisions
from planner.core.errors import InputError

REQUIRED_GPUS = [
    "A100-40GB",
    "A100-80GB",
    "H100-SXM",
    "H100-PCIe",
    "H200",
    "B200",
    "L4",
    "L40S",
    "A10G",
    "T4",
    "RTX-4090",
    "RTX-3090",
    "RTX-6000-Ada",
    "A40",
    "MI300X",
    "B300",
    "GB200",
    "GB300",
    "H20",
    "H800",
    "MI325X",
    "MI355X",
    "RTX-PRO-6000",
]
WEIGHT_IDS = "fp32 fp16 bf16 fp8 int8 gptq-int4 gptq-int8 awq-int4 nf4 q8_0 q6_k q5_k_m q4_k_m q3_k_m q2_k".split()
WEIGHT_IDS += ["mxfp4", "nvfp4"]  # microscaled FP4 checkpoints (gpt-oss, ModelOpt NVFP4)
WEIGHT_IDS += ["int4-g32"]  # compressed-tensors W4A16 group 32 (Kimi-K2.5)


def test_required_gpus_present_and_sourced():
    catalogue = gpus()
    assert set(REQUIRED_GPUS) <= set(catalogue)
    for gpu in catalogue.values():
        assert {"spec", "price"} <= set(gpu.source), gpu.id
        assert gpu.usd_per_hour > 0 and gpu.price_date
        assert gpu.usable_memory_bytes < gpu.memory_gb * 2**30 * 1.01  # CUDA never reports more than installed


def test_published_anchors():
    assert get_gpu("rtx-4090").usable_memory_bytes == 25_250_627_584  # vLLM meta.json, B10
    assert round(get_gpu("A100-80GB").usable_memory_bytes / 2**30, 2) == 79.15
    assert get_gpu("h100_sxm").tflops_bf16 == pytest.approx(989.4)  # dense, datasheet
    assert get_gpu("A100-80GB").tflops_fp8 is None  # Ampere has no FP8 tensor cores
    assert get_gpu("T4").tflops_bf16 is None


def test_precision_cli_names_are_exactly_the_contract():
    assert list(weight_precisions()) == WEIGHT_IDS
    assert list(kv_precisions()) == ["auto", "fp16", "bf16", "fp8", "nvfp4"]
    assert weight_precisions()["gptq-int4"].bits_per_weight == pytest.approx(4 + 20 / 128)
    assert all(p.engines and p.source for p in weight_precisions().values())


GOOD = """
gpus:
  - id: X1
    name: Example
    vendor: nvidia
    family: hopper
    memory_gb: 80
    usable_memory_bytes: 85000000000
    tflops_fp16: 900
    hbm_bandwidth_gb_s: 3000
"""


@pytest.mark.parametrize(
    "edit, field",
    [
        (("hbm_bandwidth_gb_s: 3000", "hbm_bandwidth_gb_s: -1"), "X1: hbm_bandwidth_gb_s"),
        (("tflops_fp16: 900", "tflops_fp16: fast"), "X1: tflops_fp16"),
        (("    family: hopper", "    family: hopper\n    colour: green"), "X1: colour"),
        (("    memory_gb: 80\n", ""), "X1: memory_gb"),
    ],
)
def test_bad_entry_names_file_entry_and_field(tmp_path, edit, field):
    path = tmp_path / "gpus.yaml"
    path.write_text(GOOD.replace(*edit))
    with pytest.raises(InputError) as err:
        load_gpus(path)
    assert err.value.field.startswith("gpus.yaml: ") and field in err.value.field


def test_good_file_loads_and_duplicates_are_refused(tmp_path):
    path = tmp_path / "gpus.yaml"
    path.write_text(GOOD)
    assert list(load_gpus(path)) == ["X1"]
    path.write_text(GOOD + GOOD.split("gpus:")[1].replace("X1", "x1"))
    with pytest.raises(InputError, match="duplicate"):
        load_gpus(path)


def test_unknown_gpu_lists_the_known_ones():
    with pytest.raises(InputError) as err:
        get_gpu("V100")
    assert err.value.field == "gpu" and "H100-SXM" in err.value.message  # a field name; the CLI prints --gpu
