"""One accelerator as a frozen pydantic model (`GPUSpec`, catalogued in data/gpus.yaml), the vendor medians for a
part without its own microbenchmark, and a custom GPU of a given memory (planner.core.specs module note)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveFloat, PositiveInt, model_validator

from planner.core.bounded import BoundedModel
from planner.core.specs import _FROZEN

# A part without its own microbenchmark takes the median of its vendor's measured parts in data/gpus.yaml (a test
# recomputes these medians from the file): stream bandwidth and 16-bit large-GEMM fractions of the datasheet.
ACHIEVED_DEFAULTS = {"nvidia": {"bandwidth": 0.885, "matmul": 0.8}, "amd": {"bandwidth": 0.77, "matmul": 0.51}}


class GPUSpec(BoundedModel):
    """One accelerator as catalogued in data/gpus.yaml (every figure sourced there)."""

    model_config = _FROZEN

    id: str = Field(min_length=1)
    name: str
    vendor: Literal["nvidia", "amd", "custom"]
    family: str
    memory_gb: PositiveFloat  # marketed memory, in the vendor's GB
    usable_memory_bytes: PositiveInt  # total bytes CUDA/ROCm reports
    tflops_fp16: PositiveFloat
    tflops_bf16: PositiveFloat | None = None
    tflops_fp8: PositiveFloat | None = None
    tflops_int8: PositiveFloat | None = None
    tflops_fp4: PositiveFloat | None = None  # dense FP4 tensor cores (Blackwell NVFP4/MXFP4, CDNA4 MXFP4)
    hbm_bandwidth_gb_s: PositiveFloat
    interconnect: str = "PCIe"
    interconnect_bandwidth_gb_s: PositiveFloat = 32.0
    scale_out_bandwidth_gb_s: PositiveFloat | None = None  # per-GPU NIC between nodes, one direction
    gpus_per_node: PositiveInt = 8  # GPUs on one NVLink / Infinity Fabric board
    # GPUs in one NVLink scale-up domain: 72 on a GB200/GB300 NVL72 rack (4 per host); None in the file = gpus_per_node
    nvlink_domain_gpus: PositiveInt | None = None  # always set: nvlink_domain_defaults_to_node
    usd_per_hour: float = Field(default=0.0, ge=0)
    price_date: str = ""
    # what kernels can move per streaming multiprocessor (AMD: compute unit) per clock bounds latency-bound kernels
    sm_count: PositiveInt | None = None
    boost_clock_mhz: PositiveFloat | None = None
    tflops_fp16_acc16: PositiveFloat | None = None  # GeForce: FP16 tensor math with FP16 accumulate (2x FP32-acc.)
    # measured on the part itself (stream-type copy/triad, large-GEMM sweeps), as a fraction of the datasheet figure;
    # absent = the median of the measured parts of the same vendor (ACHIEVED_DEFAULTS, status "estimated")
    achieved_bandwidth_fraction: float | None = Field(default=None, gt=0, le=1)
    achieved_matmul_fraction: dict[str, float] = Field(default_factory=dict)  # compute dtype -> fraction
    source: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def nvlink_domain_defaults_to_node(cls, data):
        if isinstance(data, dict) and data.get("nvlink_domain_gpus") is None:
            data = {**data, "nvlink_domain_gpus": data.get("gpus_per_node", 8)}
        return data

    @property
    def marketed_bytes(self) -> float:
        """Marketed memory in bytes, read as decimal GB (the primer's convention for textbook sums)."""
        return self.memory_gb * 1e9

    @property
    def hbm_bytes_per_s(self) -> float:
        return self.hbm_bandwidth_gb_s * 1e9

    @property
    def interconnect_bytes_per_s(self) -> float:
        return self.interconnect_bandwidth_gb_s * 1e9

    @property
    def sm_clocks_per_s(self) -> float | None:
        """Streaming multiprocessors (compute units) x boost clock: SM-cycles per second, None if not catalogued."""
        return self.sm_count * self.boost_clock_mhz * 1e6 if self.sm_count and self.boost_clock_mhz else None

    def achieved_bandwidth(self) -> tuple[float, bool]:
        """(fraction of the datasheet bandwidth a stream benchmark reaches, measured on this part?)."""
        if self.achieved_bandwidth_fraction:
            return self.achieved_bandwidth_fraction, True
        return ACHIEVED_DEFAULTS[self._vendor_key]["bandwidth"], False

    def achieved_matmul(self, dtype: str) -> tuple[float, bool]:
        """(fraction of the datasheet dense FLOP/s a large-GEMM sweep reaches in `dtype`, measured?); a dtype without
        its own measurement takes the part's 16-bit figure."""
        for key in (dtype, "bf16", "fp16"):
            if key in self.achieved_matmul_fraction:
                return self.achieved_matmul_fraction[key], True
        return ACHIEVED_DEFAULTS[self._vendor_key]["matmul"], False

    @property
    def _vendor_key(self) -> str:
        return self.vendor if self.vendor in ACHIEVED_DEFAULTS else "nvidia"

    def peak_flops(self, dtype: str) -> float | None:
        """Dense tensor-core FLOP/s for a compute dtype, or None where the GPU lacks it."""
        tflops = {
            "fp32": self.tflops_fp16 / 2 if self.tflops_fp16 else None,
            "fp16": self.tflops_fp16,
            "bf16": self.tflops_bf16,
            "fp8": self.tflops_fp8,
            "int8": self.tflops_int8,
            "fp4": self.tflops_fp4,
        }.get(dtype)
        return tflops * 1e12 if tflops else None


def custom_gpu(memory_gb: float, like: GPUSpec | None = None) -> GPUSpec:
    """A GPU of `memory_gb` decimal GB (both marketed and usable), other figures borrowed from `like`."""
    base = (
        like.model_dump()
        if like
        else {
            "family": "custom",
            "tflops_fp16": 312.0,
            "tflops_bf16": 312.0,
            "hbm_bandwidth_gb_s": 2039.0,
            "source": {"spec": "compute and bandwidth borrowed from A100-80GB as a placeholder"},
        }
    )
    base.update(
        id=f"custom-{memory_gb:g}GB",
        name=f"Custom GPU ({memory_gb:g} GB)",
        vendor="custom",
        memory_gb=memory_gb,
        usable_memory_bytes=int(round(memory_gb * 1e9)),
        usd_per_hour=base.get("usd_per_hour", 0.0),
    )
    return GPUSpec(**base)
