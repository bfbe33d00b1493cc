"""Kubernetes names of `launch --target k8s`: valid DNS-1035 labels for any model id, one per object."""

from __future__ import annotations

import json
import re

import yaml

from planner.capacity.disagg_layout import PoolLayout
from planner.capacity.launch import MAX_NAME, k8s_name, served_model
from planner.capacity.launch_disagg import disagg_launch_plan
from planner.cli import main
from planner.core.catalog import get_model, model_presets
from planner.core.scenario import Scenario
from planner.core.specs import Deployment

# a Service's name (DNS-1035 label, kubernetes apimachinery validation.IsDNS1035Label): [a-z]([-a-z0-9]*[a-z0-9])?
DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
LONG = "my-org/" + "Llama-3.1-70B-Instruct-abliterated-merged-with-extra-long-name"  # 62 characters after the org
NON_ASCII = "qwen/通义千问-Qwen2.5-7B-指令版"


def _manifest_names(model_id: str) -> list[tuple[str, str]]:
    spec = get_model("meta-llama/Llama-3.1-8B").model_copy(update={"name": model_id})
    s = Scenario(model_spec=spec, gpu="H100-SXM", deployment=Deployment(max_model_len=8192), engine="vllm")
    plan = disagg_launch_plan(s, "vllm", PoolLayout(2, 1), PoolLayout(1, 2), "nixl", "k8s")
    return [(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(plan.manifest)]


def test_a_60_character_and_a_non_ascii_model_get_valid_distinct_names_in_an_xpyd_manifest():
    assert len(LONG.split("/")[-1]) == 62
    long_names, wide_names = _manifest_names(LONG), _manifest_names(NON_ASCII)
    for named in (long_names, wide_names):
        # a Deployment and a Service per role (prefill, decode, router): each kind's names distinct
        assert len(named) == 6 and len(set(named)) == 6
        assert (
            len({n for k, n in named if k == "Deployment"}) == 3 and len({n for k, n in named if k == "Service"}) == 3
        )
        for _, name in named:
            assert DNS1035.match(name) and len(name) <= MAX_NAME <= 63, name
    # cut to 50 with the first 8 hex digits of SHA-1(model id) = 077629c8 before the role, never a trailing '-'
    assert {n for k, n in long_names if k == "Deployment"} == {
        "llama-3-1-70b-instruct-abliterate-077629c8-prefill",  # 33 + 1 + 8 + 1 + 7 = 50
        "llama-3-1-70b-instruct-abliterated-077629c8-decode",
        "llama-3-1-70b-instruct-abliterated-077629c8-router",
    }
    # the ASCII part of the non-ASCII id survives, with a hash (two such ids never collide)
    assert k8s_name(NON_ASCII).startswith("qwen2-5-7b-")
    assert k8s_name("org/模型") != k8s_name("org/模式") and k8s_name("org/模型").startswith("model-")


def test_names_of_short_ascii_ids_are_unchanged_and_a_leading_digit_gets_a_letter():
    assert k8s_name("deepseek-ai/DeepSeek-V3", "decode") == "deepseek-v3-decode"
    assert k8s_name("meta-llama/Llama-3.1-8B") == "llama-3-1-8b"
    assert k8s_name("org/01-ai--Yi") == "m-01-ai-yi"
    assert DNS1035.match(k8s_name("org/---"))  # nothing left: "model"


def test_launch_model_dir_serves_the_folder_not_config(tmp_path, capsys):
    folder = tmp_path / "My-Model"
    folder.mkdir()
    (folder / "config.json").write_bytes(model_presets()["meta-llama/Llama-3.1-8B"].read_bytes())
    assert main(["launch", "--model", str(folder), "--gpu", "H100-SXM", "--target", "k8s", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["commands"]["server"].startswith(f"vllm serve {folder} --tensor-parallel-size 1")
    assert yaml.safe_load(out["manifest"])["metadata"]["name"] == "my-model"
    assert served_model(str(folder / "config.json")) == str(folder) and served_model("META-LLAMA/Llama-3.1-8B") is None
