"""`servingplan launch`: the layout as each engine launches it, every flag one its parser accepts."""

from __future__ import annotations

import json

import pytest
import yaml

from planner.capacity.launch import launch_plan
from planner.capacity.launch_engines import BUILDERS
from planner.cli import main
from planner.core.engine_flags import KNOWN_FLAGS, ROUTER_FLAGS, SOURCES, TRTLLM_YAML_KEYS
from planner.core.errors import InputError
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment

V3 = "deepseek-ai/DeepSeek-V3"
LLAMA = "meta-llama/Llama-3.1-8B"


def _r(model=LLAMA, gpu="H100-SXM", **dep):
    return resolve(Scenario(model=model, gpu=gpu, deployment=Deployment(**{"max_model_len": 8192, **dep})))


SCENARIOS = {
    "llama tp2 fp8 kv, no prefix cache, eager": _r(
        num_gpus=2, tensor_parallel_size=2, kv_cache_dtype="fp8", enable_prefix_caching=False, enforce_eager=True
    ),
    "llama fp8 weights on one gpu": _r(weights="fp8"),
    "llama with SGLang's mixed chunks": _r(enable_mixed_chunk=True),
    "v3 tp8 ep4": _r(V3, "H200", num_gpus=8, tensor_parallel_size=8, ep_size=4, weights="fp8"),
    "v3 dp16 ep16 two nodes": _r(
        V3, "H200", num_gpus=16, tensor_parallel_size=1, data_parallel_size=16, enable_expert_parallel=True
    ),
}


def _keys(value) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    return set()


@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("engine", BUILDERS)
def test_every_flag_emitted_is_one_the_engines_parser_accepts(engine, name):
    try:
        plan = launch_plan(SCENARIOS[name], engine)
    except InputError as err:  # a layout the engine cannot express is refused, naming --engine
        assert err.field == "--engine" and engine in err.message
        return
    for c in plan.commands:
        unknown = set(c.flags) - KNOWN_FLAGS[engine]
        assert not unknown, f"{engine} ({SOURCES[engine]}) has no {unknown}"
    for text in plan.files.values():
        assert _keys(yaml.safe_load(text)) <= TRTLLM_YAML_KEYS


def test_trtllm_recipe_tp8_ep4_puts_moe_tp_2_in_its_extra_options():
    plan = launch_plan(SCENARIOS["v3 tp8 ep4"], "tensorrt-llm")
    line = plan.commands[0].argv
    assert line[:2] == ("trtllm-serve", V3)
    assert line[line.index("--tp_size") + 1] == "8" and line[line.index("--ep_size") + 1] == "4"
    options = yaml.safe_load(plan.files["extra-llm-api-options.yaml"])
    assert options["moe_expert_parallel_size"] == 4 and options["moe_tensor_parallel_size"] == 2
    assert "enable_attention_dp" not in options and options["kv_cache_config"]["enable_block_reuse"] is True
    # SGLang: --tp-size 8 --ep-size 4 (MoE-TP = 8 / 4); vLLM cannot split experts below TP × DP
    sg = launch_plan(SCENARIOS["v3 tp8 ep4"], "sglang").commands[0].argv
    assert sg[sg.index("--tp-size") + 1] == "8" and sg[sg.index("--ep-size") + 1] == "4"
    with pytest.raises(InputError, match="EP 4 below TP × DP = 8"):
        launch_plan(SCENARIOS["v3 tp8 ep4"], "vllm")


def test_vllm_line_carries_the_limits_kv_dtype_and_prefix_caching_under_its_names():
    argv = launch_plan(SCENARIOS["llama tp2 fp8 kv, no prefix cache, eager"], "vllm").commands[0].argv
    pairs = dict(zip(argv, argv[1:]))
    assert argv[:3] == ("vllm", "serve", LLAMA)
    assert pairs["--tensor-parallel-size"] == "2" and pairs["--max-model-len"] == "8192"
    assert pairs["--kv-cache-dtype"] == "fp8" and pairs["--gpu-memory-utilization"] == "0.9"
    # vLLM V1's defaults for a >= 70 GiB GPU under `vllm serve`: 1024 sequences, 8192 batched tokens
    assert pairs["--max-num-seqs"] == "1024" and pairs["--max-num-batched-tokens"] == "8192"
    assert "--no-enable-prefix-caching" in argv and "--enforce-eager" in argv
    sg = launch_plan(SCENARIOS["llama tp2 fp8 kv, no prefix cache, eager"], "sglang").commands[0].argv
    assert "--disable-radix-cache" in sg and "--disable-cuda-graph" in sg and "fp8_e4m3" in sg
    online = launch_plan(SCENARIOS["llama fp8 weights on one gpu"], "vllm").commands[0].argv
    assert online[online.index("--quantization") + 1] == "fp8"


def test_two_node_dp16_is_a_leader_and_headless_workers_and_a_leaderworkerset(capsys):
    plan = launch_plan(SCENARIOS["v3 dp16 ep16 two nodes"], "vllm", "k8s")
    assert [c.role for c in plan.commands] == ["leader", "worker"]
    worker = plan.commands[1].argv
    assert "--headless" in worker and worker[worker.index("--data-parallel-size-local") + 1] == "8"
    doc = yaml.safe_load(plan.manifest)
    assert doc["kind"] == "LeaderWorkerSet" and doc["spec"]["leaderWorkerTemplate"]["size"] == 2
    pod = doc["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    assert pod["resources"]["limits"]["nvidia.com/gpu"] == 8 and "--headless" in pod["command"][-1]


def test_cli_json_contract_commands_and_manifest(capsys):
    args = ["launch", "--model", LLAMA, "--gpu", "H100-SXM", "--tp", "2", "--num-gpus", "4", "--target", "k8s"]
    assert main([*args, "--engine", "sglang", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out)[:4] == ["engine", "target", "commands", "manifest"]
    assert out["commands"]["server"].startswith("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B")
    doc = yaml.safe_load(out["manifest"])
    assert doc["kind"] == "Deployment" and doc["spec"]["replicas"] == 2
    assert doc["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 2
    assert main(["launch", "--model", V3, "--gpu", "H200", "--tp", "8", "--ep", "4", "--engine", "vllm"]) == 2
    assert "--engine" in capsys.readouterr().err


def test_xpyd_layout_gets_prefill_and_decode_lines_with_their_role_and_transfer_engine(capsys):
    from planner.capacity.disagg_layout import PoolLayout
    from planner.capacity.launch_disagg import disagg_launch_plan

    s = Scenario(model=V3, gpu="H200", deployment=Deployment(weights="fp8", max_model_len=8192), engine="sglang")
    plan = disagg_launch_plan(s, "sglang", PoolLayout(1, 8), PoolLayout(2, 1, 8, 8), "mooncake", "k8s")
    assert [c.role for c in plan.commands] == ["prefill", "decode", "router"]
    prefill, decode, router = (c.argv for c in plan.commands)
    assert prefill[prefill.index("--disaggregation-mode") + 1] == "prefill" and "--enable-dp-attention" in decode
    assert decode[decode.index("--disaggregation-transfer-backend") + 1] == "mooncake"
    for c in plan.commands[:2]:
        assert set(c.flags) <= KNOWN_FLAGS["sglang"]
    # the router: one --prefill URL + bootstrap port per prefill instance, one --decode per decode instance
    assert set(plan.commands[2].flags) <= ROUTER_FLAGS["sglang"]
    assert router.count("--prefill") == 1 and router.count("--decode") == 2 and "8998" in router
    docs = [d for d in yaml.safe_load_all(plan.manifest) if d["kind"] != "Service"]
    assert [d["kind"] for d in docs] == ["Deployment", "Deployment", "Deployment"] and docs[1]["spec"]["replicas"] == 2
    with pytest.raises(InputError, match="mooncake or nixl"):
        disagg_launch_plan(s, "sglang", PoolLayout(1, 8), PoolLayout(1, 8), "tcp")
    args = ["launch", "--model", LLAMA, "--gpu", "H100-SXM", "--engine", "vllm", "--prefill-instances", "2"]
    args += ["--prefill-tp", "1", "--decode-instances", "1", "--decode-tp", "2", "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["commands"]) == {"prefill", "decode", "router"}
    assert "--prefiller-hosts $PREFILL_HOST_0 $PREFILL_HOST_1 --prefiller-ports 8000 8000" in out["commands"]["router"]
    assert '--kv-transfer-config \'{"kv_connector":"NixlConnector","kv_role":"kv_both"}\'' in out["commands"]["decode"]
    assert "--kv-transfer-config" in KNOWN_FLAGS["vllm"]


def test_xpyd_k8s_manifest_runs_the_router_over_the_role_services():
    # 1P2D DeepSeek-V3 on H200: prefill TP 8 (one node: a Deployment), decode DP 16 + EP 16 (two nodes: a
    # LeaderWorkerSet); each role gets a Service, the router a Deployment + Service running the shell target's line
    from planner.capacity.disagg_layout import PoolLayout
    from planner.capacity.launch_disagg import disagg_launch_plan

    for engine in ("sglang", "vllm"):
        s = Scenario(model=V3, gpu="H200", deployment=Deployment(weights="fp8", max_model_len=8192), engine=engine)
        plan = disagg_launch_plan(s, engine, PoolLayout(1, 8), PoolLayout(2, 1, 16, 16), "nixl", "k8s")
        docs = list(yaml.safe_load_all(plan.manifest))
        named = {(d["kind"], d["metadata"]["name"]) for d in docs}
        for role in ("prefill", "decode", "router"):
            assert ("Service", f"deepseek-v3-{role}") in named  # every role reachable by name
        assert ("Deployment", "deepseek-v3-prefill") in named and ("LeaderWorkerSet", "deepseek-v3-decode") in named
        router = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "deepseek-v3-router")
        argv = router["spec"]["template"]["spec"]["containers"][0]["command"]
        shell = plan.commands[-1].argv  # the shell target's router line, over $PREFILL_HOST_i / $DECODE_HOST_i
        flags = {a for a in argv if a.startswith("--")}
        assert argv[:2] == list(shell[:2]) and flags == set(plan.commands[-1].flags) and flags <= ROUTER_FLAGS[engine]
        assert any("deepseek-v3-prefill" in a for a in argv) and any("deepseek-v3-decode" in a for a in argv)
        services = {d["metadata"]["name"]: d["spec"] for d in docs if d["kind"] == "Service"}
        assert services["deepseek-v3-decode"]["selector"] == {"app": "deepseek-v3-decode", "servingplan/pod": "leader"}
        decode_lws = next(d for d in docs if d["kind"] == "LeaderWorkerSet")
        leader_labels = decode_lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["metadata"]["labels"]
        assert services["deepseek-v3-decode"]["selector"].items() <= leader_labels.items()
        ports = {p["port"] for p in services["deepseek-v3-prefill"]["ports"]}
        assert ports == ({8000, 8998} if engine == "sglang" else {8000})  # SGLang's bootstrap port


def test_sglang_line_carries_enable_mixed_chunk_only_when_set():
    on = launch_plan(SCENARIOS["llama with SGLang's mixed chunks"], "sglang").commands[0].flags
    off = launch_plan(SCENARIOS["llama fp8 weights on one gpu"], "sglang").commands[0].flags
    assert "--enable-mixed-chunk" in on and "--enable-mixed-chunk" not in off
