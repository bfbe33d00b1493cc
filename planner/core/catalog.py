"""Catalogues as data: GPUs (data/gpus.yaml), precisions (data/precisions.yaml) and model presets
(data/models/*.json, published Hugging Face config.json files). One loader each, validated at load: a bad entry
fails with the file, the entry and the field named.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError

from planner.core.errors import InputError, from_validation_error
from planner.core.gpu_spec import GPUSpec
from planner.core.hf_config import load_config_file
from planner.core.model_spec import ModelSpec
from planner.core.paths import data_dir
from planner.core.precision import KVPrecision, WeightPrecision

DATA_DIR = data_dir()
MODELS_DIR = DATA_DIR / "models"
QUANT_SUFFIX = ".hf_quant_config.json"  # a ModelOpt checkpoint's quantisation file beside its config (not a preset)
DEFAULT_MODEL = "meta-llama/Llama-3.1-8B"
DEFAULT_GPU = "H100-SXM"


# libyaml's safe loader when PyYAML was built with it (~10× faster: it keeps `servingplan memory` quick to answer)
_FastSafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _read_yaml(path: Path) -> dict:
    """Parse YAML with the safe loader only (no tags, no object construction)."""
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_FastSafeLoader)
    except yaml.YAMLError as err:
        raise InputError(path.name, f"is not valid YAML: {str(err)[:300]}") from None
    except UnicodeDecodeError:
        raise InputError(path.name, "is not UTF-8 text (is it a binary file?)") from None
    except RecursionError:
        raise InputError(path.name, "nests too deeply to be a catalogue") from None
    except OSError as err:
        raise InputError(path.name, f"cannot be read: {err.strerror}") from None
    if not isinstance(data, dict):
        raise InputError(path.name, "must be a mapping at the top level")
    return data


def _entries(path: Path, data: dict, key: str, cls: type[BaseModel]) -> list:
    rows = data.get(key)
    if not isinstance(rows, list) or not rows:
        raise InputError(f"{path.name}: {key}", "must be a non-empty list")
    out, seen = [], set()
    for i, row in enumerate(rows):
        entry = row.get("id", f"#{i + 1}") if isinstance(row, dict) else f"#{i + 1}"
        if not isinstance(row, dict):
            raise InputError(f"{path.name}: {key}[{entry}]", "must be a mapping")
        try:
            item = cls(**row)
        except ValidationError as err:
            raise from_validation_error(err, prefix=f"{path.name}: {entry}: ") from None
        if item.id.lower() in seen:
            raise InputError(f"{path.name}: {entry}: id", "duplicate id")
        seen.add(item.id.lower())
        out.append(item)
    return out


def load_gpus(path: Path | None = None) -> dict[str, GPUSpec]:
    """All catalogued GPUs keyed by id, in file order."""
    path = path or DATA_DIR / "gpus.yaml"
    return {g.id: g for g in _entries(path, _read_yaml(path), "gpus", GPUSpec)}


@lru_cache(maxsize=1)
def gpus() -> dict[str, GPUSpec]:
    return load_gpus()


def get_gpu(gpu_id: str) -> GPUSpec:
    """A catalogue GPU by id, matched case-insensitively (also ignoring '-', '_' and spaces)."""

    def norm(s: str) -> str:
        return s.lower().replace("-", "").replace("_", "").replace(" ", "")

    for gid, gpu in gpus().items():
        if norm(gid) == norm(gpu_id):
            return gpu
    raise InputError("gpu", f"unknown GPU {gpu_id!r}; known: {', '.join(gpus())}")


@lru_cache(maxsize=1)
def _precisions() -> tuple[dict[str, WeightPrecision], dict[str, KVPrecision]]:
    path = DATA_DIR / "precisions.yaml"
    data = _read_yaml(path)
    weights = {p.id: p for p in _entries(path, data, "weights", WeightPrecision)}
    kv = {p.id: p for p in _entries(path, data, "kv", KVPrecision)}
    return weights, kv


def weight_precisions() -> dict[str, WeightPrecision]:
    return _precisions()[0]


def kv_precisions() -> dict[str, KVPrecision]:
    return _precisions()[1]


def get_weight_precision(pid: str, field: str = "--weights") -> WeightPrecision:
    try:
        return weight_precisions()[pid.lower()]
    except KeyError:
        raise InputError(field, f"unknown weight precision {pid!r}; known: {' '.join(weight_precisions())}") from None


def get_kv_precision(pid: str, field: str = "--kv-dtype") -> KVPrecision:
    try:
        return kv_precisions()[pid.lower()]
    except KeyError:
        raise InputError(field, f"unknown KV-cache dtype {pid!r}; known: {' '.join(kv_precisions())}") from None


def preset_id(path: Path) -> str:
    """The Hugging Face repo id of a preset file: 'meta-llama--Llama-2-7b-hf.json' -> 'meta-llama/Llama-2-7b-hf'."""
    return path.stem.replace("--", "/", 1)


FAMILIES = (  # (family, what a preset id starts with or contains), first match wins
    ("gpt-oss", "openai/gpt-oss"),
    ("DeepSeek", "deepseek-ai/"),
    ("Qwen3.5", "qwen/qwen3.5"),
    ("Qwen3", "qwen/qwen3"),
    ("Qwen2.5", "qwen/qwen2.5"),
    ("Llama 4", "llama-4"),
    ("Llama", "llama"),
    ("Gemma", "google/gemma"),
    ("Mistral", "mistralai/"),
    ("Nemotron", "nvidia/"),
    ("Step", "stepfun-ai/"),
    ("MiMo", "xiaomimimo/"),
    ("Phi", "microsoft/phi"),
    ("Falcon", "tiiuae/falcon"),
)


def model_family(preset: str) -> str:
    """The family a preset belongs to (the sidebar groups presets by it); "Other" when none matches."""
    low = preset.lower()
    return next((family for family, key in FAMILIES if low.startswith(key) or key in low), "Other")


def presets_by_family() -> list[str]:
    """Preset ids grouped by family in FAMILIES order, ids sorted within a family."""
    order = {family: i for i, (family, _) in enumerate(FAMILIES)}
    return sorted(model_presets(), key=lambda p: (order.get(model_family(p), len(order)), p.lower()))


@lru_cache(maxsize=1)
def model_presets() -> dict[str, Path]:
    """Preset id -> config.json path, sorted by id."""
    configs = [p for p in MODELS_DIR.glob("*.json") if not p.name.endswith(QUANT_SUFFIX)]
    return {preset_id(p): p for p in sorted(configs, key=lambda p: preset_id(p).lower())}


@lru_cache(maxsize=64)
def _load_preset(preset: str) -> ModelSpec:
    return load_config_file(model_presets()[preset], name=preset)


MAX_MODEL_ARG_CHARS = 1024  # a preset id or a path; 10,000 characters is a paste accident (the OS refuses it)


def get_model(model: str) -> ModelSpec:
    """A preset by Hugging Face id (case-insensitive), or a path to any config.json."""
    for pid in model_presets():
        if pid.lower() == model.lower():
            return _load_preset(pid)
    if len(model) > MAX_MODEL_ARG_CHARS:
        raise InputError("model", f"is {len(model):,} characters; a preset id or a path has at most 1,024")
    path = Path(model)
    try:
        exists = path.exists()
    except (OSError, ValueError):  # a path component over 255 bytes, a NUL
        raise InputError("model", f"not a usable path: {model[:60]!r}") from None
    if path.suffix == ".json" or exists:
        if not exists:
            raise InputError("model", f"no such file: {model}")
        if path.is_dir():
            path = path / "config.json"
        try:
            return load_config_file(path)
        except InputError as err:  # name the flag the path came from, then the file's own field
            raise InputError(
                err.field if err.field.startswith("model") else f"model {err.field}", err.message
            ) from None
    raise InputError(
        "model",
        f"unknown model {model[:80]!r}: give a preset id ({', '.join(model_presets())}) or a path to a config.json",
    )
