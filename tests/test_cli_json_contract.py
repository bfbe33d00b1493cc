"""`--json` is a contract: the CLI prints the same keys, in the same order, as before results became dataclasses.

The files in tests/fixtures/cli_json were printed by the CLI before the change (issue 13). Outputs that do not depend
on the step-time formula (memory, batching in steps, PagedAttention, FlashAttention, LoRA, the primer's walkthroughs)
must match byte for byte in the keys they had (keys are only ever added, after the old ones); the others must keep
every key, its order and the type of its value, so that a refit of data/efficiency.yaml does not break this test
while a renamed, dropped or reordered key does.
"""

from __future__ import annotations

import json

import pytest
from conftest import ROOT

from planner.cli import main

FIXTURES = ROOT / "tests" / "fixtures" / "cli_json"
REQUESTS = str(FIXTURES / "requests.csv")

EXACT = {
    "memory": "memory --model meta-llama/Llama-2-7b-hf --gpu-memory-gb 48 --weights fp16 --context 4000",
    "memory_dsv3": "memory --model deepseek-ai/DeepSeek-V3 --gpu H200 --dp 8 --ep 8 --max-model-len 32768",
    "batching": f"batching --requests {REQUESTS} --slots 3 --max-wait 2",
    "paged": "paged",
    "flash": "flash-attn",
    "lora": "lora",
    "walk_kv": "walkthrough kv-cache",
    "walk_six": "walkthrough six-requests",
}
SHAPE = {
    "estimate": "estimate --batch 32 --input-tokens 2000 --output-tokens 300 --engine vllm",
    "estimate_cont": "estimate --mode continuous --batch 8 --input-tokens 1000 --output-tokens 200",
    "prefix_trace": "prefix-cache --input-tokens 2000 --output-tokens 200 --trace mooncake --hit-rate 0.5",
    "spec": "spec-decode --alpha 0.8 --k 4 --draft-model unsloth/Llama-3.2-1B-Instruct --batch 1",
    "tp": "tp --model meta-llama/Llama-3.1-70B",
    "simulate": "simulate --rate 5 --num-requests 200 --slo-ttft-ms 500 --slo-tpot-ms 50",
    "fleet": "fleet --rate 5 --num-requests 200 --replicas 2 --router prefix-aware --turns 2 --think-time 1 "
    "--system-prompt-tokens 512",
    "capacity": "capacity --target-rate 20 --slo-ttft-p95 2 --slo-tpot-p95 0.1",
    "disagg": "disagg --model meta-llama/Llama-3.1-8B --gpu H100-SXM --profile custom --input-tokens 4000 "
    "--output-tokens 200 --target-rate 5 --slo-ttft-p95 2 --slo-tpot-p95 0.05 --no-compare",
    "recommend_disagg": "recommend --target-rate 20 --gpus H100-SXM --precisions bf16 --tps 1 --num-requests 200 "
    "--workers 1 --disagg",
}


def _printed(command: str, capsys) -> str:
    assert main([*command.split(), "--json"]) == 0
    return capsys.readouterr().out


def _shape(value):
    """Keys in order and value types; numbers and null are one type (a ridge batch may be none at another fit)."""
    if isinstance(value, dict):
        return [(k, _shape(v)) for k, v in value.items()]
    if isinstance(value, list):  # the element shapes, each once: a refit may change how many probes a search runs
        shapes = []
        for v in value:
            if (sv := _shape(v)) not in shapes:
                shapes.append(sv)
        return shapes
    if isinstance(value, bool):
        return "bool"
    return "number" if value is None or isinstance(value, (int, float)) else type(value).__name__


@pytest.mark.parametrize("name", EXACT)
def test_json_is_byte_for_byte_what_it_was(name, capsys):
    fixture = (FIXTURES / f"{name}.json").read_text(encoding="utf-8")
    printed = json.loads(_printed(EXACT[name], capsys))
    old = list(json.loads(fixture))
    assert list(printed)[: len(old)] == old  # added keys (memory: engine, memory_rule, blockers) come after
    assert json.dumps({k: printed[k] for k in old}, indent=2) + "\n" == fixture


@pytest.mark.parametrize("name", SHAPE)
def test_json_keeps_its_keys_their_order_and_types(name, capsys):
    expected = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    assert _shape(json.loads(_printed(SHAPE[name], capsys))) == _shape(expected)


def test_the_shape_check_sees_a_reordered_or_renamed_key():
    assert _shape({"a": 1, "b": [{"c": 2.5}]}) == _shape({"a": 7, "b": [{"c": 1}]})
    assert _shape({"a": 1, "b": 2}) != _shape({"b": 2, "a": 1})
    assert _shape({"a": 1}) != _shape({"a_s": 1})
