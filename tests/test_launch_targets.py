"""`launch --target lws|kserve`: each manifest parses and validates against its project's CRD schema
(tests/fixtures/crds, SOURCES.md there)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from planner.capacity.disagg_layout import PoolLayout
from planner.capacity.launch import launch_plan
from planner.capacity.launch_disagg import disagg_launch_plan
from planner.cli import main
from planner.core.errors import InputError
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment

CRDS = Path(__file__).parent / "fixtures" / "crds"
SCHEMAS = {"LeaderWorkerSet": ("leaderworkerset.json", "v1"), "InferenceService": ("inferenceservice.json", "v1beta1")}
LLAMA = "meta-llama/Llama-3.1-8B"
V3 = "deepseek-ai/DeepSeek-V3"


def _validate(doc: dict) -> None:
    """The object against its CRD's openAPIV3Schema (apiVersion = group/version, properties, required, types)."""
    file, version = SCHEMAS[doc["kind"]]
    crd = json.loads((CRDS / file).read_text())
    assert doc["apiVersion"] == f"{crd['group']}/{version}" and doc["kind"] == crd["kind"]
    jsonschema.Draft7Validator(crd["versions"][version]).validate(doc)


def test_the_schemas_catch_a_wrong_field():
    # a check that cannot fail is no check: a misspelt required field and a string count are refused
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "x"}}
    with pytest.raises(jsonschema.ValidationError, match="leaderWorkerTemplate"):
        _validate(lws | {"spec": {"replicas": 1, "leaderWorkerTemplat": {}}})
    isvc = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService", "metadata": {"name": "x"}}
    with pytest.raises(jsonschema.ValidationError, match="is not of type 'integer'"):
        _validate(isvc | {"spec": {"predictor": {"minReplicas": "2"}}})


def test_lws_target_is_a_leaderworkerset_for_one_and_two_node_instances():
    one = resolve(Scenario(model=LLAMA, gpu="H100-SXM", deployment=Deployment(max_model_len=8192, num_gpus=4)))
    doc = yaml.safe_load(launch_plan(one, "vllm", "lws").manifest)
    _validate(doc)
    assert doc["spec"]["replicas"] == 4 and doc["spec"]["leaderWorkerTemplate"]["size"] == 1
    dep = Deployment(max_model_len=8192, num_gpus=16, tensor_parallel_size=1, data_parallel_size=16)
    two = resolve(Scenario(model=V3, gpu="H200", deployment=dep.model_copy(update={"enable_expert_parallel": True})))
    doc = yaml.safe_load(launch_plan(two, "sglang", "lws").manifest)
    _validate(doc)
    template = doc["spec"]["leaderWorkerTemplate"]
    assert template["size"] == 2 and template["leaderTemplate"]["metadata"]["labels"]["servingplan/pod"] == "leader"
    assert template["workerTemplate"]["spec"]["containers"][0]["image"] == "lmsysorg/sglang:v0.5.9"


def test_kserve_target_is_an_inference_service_with_the_replicas_as_min_and_max(capsys):
    args = ["launch", "--model", LLAMA, "--gpu", "H100-SXM", "--tp", "2", "--num-gpus", "6", "--target", "kserve"]
    assert main([*args, "--engine", "vllm", "--json"]) == 0
    doc = yaml.safe_load(json.loads(capsys.readouterr().out)["manifest"])
    _validate(doc)
    predictor = doc["spec"]["predictor"]
    assert predictor["minReplicas"] == predictor["maxReplicas"] == 3  # 6 GPUs / TP 2
    container = predictor["containers"][0]
    assert container["name"] == "kserve-container" and container["resources"]["limits"]["nvidia.com/gpu"] == 2
    assert container["image"] == "vllm/vllm-openai:v0.18.0" and "vllm serve" in container["command"][-1]
    dep = Deployment(max_model_len=8192, num_gpus=16, tensor_parallel_size=1, data_parallel_size=16)
    two = resolve(Scenario(model=V3, gpu="H200", deployment=dep.model_copy(update={"enable_expert_parallel": True})))
    with pytest.raises(InputError, match="use lws"):
        launch_plan(two, "sglang", "kserve")


def test_xpyd_lws_target_validates_per_role_and_kserve_is_refused():
    s = Scenario(model=V3, gpu="H200", deployment=Deployment(weights="fp8", max_model_len=8192), engine="sglang")
    plan = disagg_launch_plan(s, "sglang", PoolLayout(1, 8), PoolLayout(2, 1, 16, 16), "nixl", "lws")
    docs = list(yaml.safe_load_all(plan.manifest))
    sets = [d for d in docs if d["kind"] == "LeaderWorkerSet"]
    assert [d["metadata"]["name"] for d in sets] == ["deepseek-v3-prefill", "deepseek-v3-decode"]
    assert [d["spec"]["leaderWorkerTemplate"]["size"] for d in sets] == [1, 2]
    for d in sets:
        _validate(d)
    with pytest.raises(InputError, match="--target|xPyD"):
        disagg_launch_plan(s, "sglang", PoolLayout(1, 8), PoolLayout(1, 8), "nixl", "kserve")
