"""Launch lines for a disaggregated xPyD layout: X prefill and Y decode instances of the engine, each told its role
and the KV transfer engine, as vLLM and SGLang take them.

    vLLM    both roles: --kv-transfer-config {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
            (vllm/engine/arg_utils.py @99d7eb5d: --kv-transfer-config; docs/features/nixl_connector_usage.md)
    SGLang  --disaggregation-mode prefill | decode, --disaggregation-transfer-backend mooncake | nixl
            (docs/advanced_features/server_arguments.md @b36e8e19, "PD disaggregation")
The router in front, as a third line (its flags checked against planner.core.engine_flags ROUTER_FLAGS):
    SGLang  python -m sglang_router.launch_router --pd-disaggregated --prefill URL 8998 … --decode URL …
    vLLM    python toy_proxy_server.py --prefiller-hosts … --prefiller-ports … --decoder-hosts … --decoder-ports …
            (vLLM's NixlConnector proxy example; vllm-project/router or llm-d serve the same role in production)
the instances' addresses as $PREFILL_HOST_i / $DECODE_HOST_i (an instance's first node). Kubernetes: one Deployment
(or LeaderWorkerSet) and a Service per role, and the router as a Deployment + Service running the same router line over
the two role Services' names.
"""

from __future__ import annotations

import json
from dataclasses import replace

from planner.capacity.disagg_layout import PoolLayout, instance
from planner.capacity.launch import (
    IMAGES,
    LEADER,
    LaunchPlan,
    dump_yaml,
    k8s_manifest,
    k8s_name,
    launch_plan,
    served_model,
)
from planner.capacity.launch_engines import PORT, Command
from planner.core.engine_flags import ROUTER_SOURCES, SGLANG_BOOTSTRAP_PORT
from planner.core.errors import InputError
from planner.core.scenario import Scenario

NIXL_CONFIG = json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"}, separators=(",", ":"))
ROUTER_NOTE = {
    "vllm": "router: vLLM's NixlConnector proxy example (round robin; vllm-project/router or llm-d in production), "
    "run on its own host; " + ROUTER_SOURCES["vllm"],
    "sglang": "router: SGLang's PD router (sglang-router), run on its own host; " + ROUTER_SOURCES["sglang"],
}
VLLM_PROXY = "tests/v1/kv_connector/nixl_integration/toy_proxy_server.py"  # in a vLLM checkout
ROUTER_K8S_NOTE = {
    "vllm": f"k8s router: the vLLM image has no tests/ folder; copy {VLLM_PROXY} from a vLLM checkout into it",
    "sglang": "k8s router: the router pod runs sglang_router from the SGLang image, over the role Services",
}
SGLANG_BOOTSTRAP_NOTE = (
    "k8s: with several prefill pods behind one Service, the decode's bootstrap connection may reach another prefill "
    "pod than the one that prefilled; list each prefill pod's address (or use sglang-router's Kubernetes service "
    "discovery) instead of the Service"
)


def instance_hosts(prefill: PoolLayout, decode: PoolLayout) -> tuple[list[str], list[str]]:
    """The shell target's addresses: each instance's first node, as $PREFILL_HOST_i / $DECODE_HOST_i."""
    return [f"$PREFILL_HOST_{i}" for i in range(prefill.instances)], [
        f"$DECODE_HOST_{i}" for i in range(decode.instances)
    ]


def router_command(engine: str, p_hosts: list[str], d_hosts: list[str]) -> Command:
    """The router's line over the prefill and decode addresses (module note)."""
    if engine == "sglang":
        argv = ["python", "-m", "sglang_router.launch_router", "--pd-disaggregated"]
        for h in p_hosts:
            argv += ["--prefill", f"http://{h}:{PORT}", str(SGLANG_BOOTSTRAP_PORT)]
        for h in d_hosts:
            argv += ["--decode", f"http://{h}:{PORT}"]
    else:
        argv = ["python", VLLM_PROXY, "--prefiller-hosts", *p_hosts, "--prefiller-ports"]
        argv += [str(PORT)] * len(p_hosts) + ["--decoder-hosts", *d_hosts, "--decoder-ports"]
        argv += [str(PORT)] * len(d_hosts)
    return Command("router", tuple(argv + ["--host", "0.0.0.0", "--port", str(PORT)]))


def service_name(model: str, role: str) -> str:
    """The DNS name of a role's Service (the router's, the prefill's, the decode's)."""
    return k8s_name(model, role)


def _service(name: str, selector: dict, ports: list[int]) -> str:
    """A ClusterIP Service in front of the pods `selector` picks, on `ports`."""
    spec_ports = [{"name": f"port-{p}", "port": p, "targetPort": p} for p in ports]
    doc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}}
    return dump_yaml(doc | {"spec": {"selector": selector, "ports": spec_ports}})


def role_service(engine: str, model: str, role: str, nodes: int) -> str:
    """The Service the router reaches a role through: its pods (a LeaderWorkerSet's leaders), the engine's port and,
    for SGLang's prefill, the bootstrap port the decode side pulls the KV handshake from."""
    name = service_name(model, role)
    selector = {"app": name} | (LEADER if nodes > 1 else {})
    ports = [PORT] + ([SGLANG_BOOTSTRAP_PORT] if engine == "sglang" and role == "prefill" else [])
    return _service(name, selector, ports)


def router_manifests(engine: str, model: str) -> list[str]:
    """The router as a Deployment (one pod, no GPU) and its Service: the shell target's router line over the prefill
    and decode Services' names (each Service spreads over its role's instances)."""
    name = service_name(model, "router")
    router = router_command(engine, [service_name(model, "prefill")], [service_name(model, "decode")])
    labels = {"app": name}
    pod = {"containers": [{"name": "router", "image": IMAGES[engine], "command": list(router.argv)}]}
    pod["containers"][0]["ports"] = [{"containerPort": PORT}]
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels}}
    doc["spec"] = {"replicas": 1, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}}}
    doc["spec"]["template"]["spec"] = pod
    return [dump_yaml(doc), _service(name, labels, [PORT])]


def role_scenario(s: Scenario, role: str) -> Scenario:
    """DeepEP's automatic mode made explicit per role, as SGLang's auto picks it by the step (normal kernels for
    prefill, low-latency for decode): vLLM has no auto mode, and a role's line then says what it runs."""
    d = s.deployment
    if d.moe_a2a_backend != "deepep" or d.deepep_mode != "auto":
        return s
    mode = "normal" if role == "prefill" else "low_latency"
    return s.model_copy(update={"deployment": d.model_copy(update={"deepep_mode": mode})})


def _role_flags(engine: str, role: str, transfer: str) -> tuple[str, ...]:
    if engine == "vllm":
        if transfer != "nixl":
            raise InputError("--transfer-engine", f"vLLM's lines here use NixlConnector, not {transfer}")
        return ("--kv-transfer-config", NIXL_CONFIG)
    if transfer not in ("nixl", "mooncake"):
        raise InputError("--transfer-engine", f"SGLang moves KV with mooncake or nixl, not {transfer}")
    return ("--disaggregation-mode", role, "--disaggregation-transfer-backend", transfer)


def disagg_launch_plan(
    s: Scenario, engine: str, prefill: PoolLayout, decode: PoolLayout, transfer: str = "nixl", target: str = "shell"
) -> LaunchPlan:
    """Prefill and decode lines (and for k8s a manifest per role) of the given xPyD layout (module note)."""
    if target not in ("shell", "k8s", "lws"):
        raise InputError("--target", f"an xPyD layout launches as shell lines, k8s or lws, not {target}")
    if engine not in ROUTER_NOTE:
        raise InputError("--engine", f"disaggregated launch lines are for {' and '.join(ROUTER_NOTE)}, not {engine}")
    commands, manifests, notes, files = [], [], [], {}
    nodes = gpus = 0
    path = None if s.model_spec else served_model(s.model)
    model = path or (s.model_spec.name if s.model_spec else s.model)  # what names the Kubernetes objects
    for role, pool in (("prefill", prefill), ("decode", decode)):
        one = launch_plan(instance(role_scenario(s, role), pool, role), engine, "shell", path)
        flags = _role_flags(engine, role, transfer)
        with_flags = tuple(replace(c, argv=c.argv + flags) for c in one.commands)
        if target in ("k8s", "lws"):  # the pods run the role's lines under their own names (server, leader, worker)
            pods = replace(one, target=target, replicas=pool.instances, commands=with_flags)
            manifests += [k8s_manifest(pods, model, role), role_service(engine, model, role, one.nodes)]
        commands += [replace(c, role=role if c.role == "server" else f"{role} {c.role}") for c in with_flags]
        notes += [n for n in one.notes if n not in notes]
        files.update(one.files)
        nodes, gpus = max(nodes, one.nodes), max(gpus, one.gpus_per_node)
    commands.append(router_command(engine, *instance_hosts(prefill, decode)))
    notes.append(ROUTER_NOTE[engine])
    manifest = None
    if target in ("k8s", "lws"):
        manifests += router_manifests(engine, model)
        notes.append(ROUTER_K8S_NOTE[engine])
        notes += [SGLANG_BOOTSTRAP_NOTE] if engine == "sglang" and prefill.instances > 1 else []
        manifest = "---\n".join(manifests)
    replicas = prefill.instances + decode.instances
    return LaunchPlan(engine, target, nodes, gpus, replicas, tuple(commands), files, manifest, tuple(notes))
