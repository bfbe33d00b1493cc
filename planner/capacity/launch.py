"""The scenario as its engine would launch it: the command line per role and, for Kubernetes, a manifest.

Each engine gets the scenario's parallel layout (planner.core.engine_flags: LAYOUT_NAMES), its limits (context
length, running requests, batched tokens, KV block size, memory share), KV dtype, weight format and prefix caching
under its own flag names (planner.capacity.launch_engines); every flag emitted is one its parser accepts at the
pinned commit (planner.core.engine_flags.KNOWN_FLAGS, checked by tests/test_launch.py). A layout the engine cannot
express raises InputError naming --engine.

Memory shares differ: vLLM's --gpu-memory-utilization and SGLang's --mem-fraction-static are shares of the whole
GPU; TensorRT-LLM's kv_cache_free_gpu_memory_fraction and LMDeploy's --cache-max-entry-count are shares of the
memory left after the weights, so they get the planned KV pool / (usable memory − weights per GPU).

Kubernetes: a Deployment of `replicas` pods for a one-node instance; a LeaderWorkerSet (leaderworkerset.x-k8s.io/v1,
whose pods get LWS_LEADER_ADDRESS and LWS_WORKER_INDEX) of `replicas` groups of `nodes` pods for a multi-node one;
each pod requests its node's GPUs as nvidia.com/gpu and a memory-backed /dev/shm (NCCL needs more than the default).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from planner.capacity.launch_engines import BUILDERS, PORT, Command, Settings
from planner.capacity.manifest_docs import deployment, inference_service, leader_worker_set
from planner.core.catalog import model_presets
from planner.core.errors import InputError
from planner.core.scenario import Resolved
from planner.memory.engine_pool import sglang_fraction
from planner.memory.plan import plan_memory

TARGETS = ("shell", "k8s", "lws", "kserve")  # kserve: one-node instances; lws: any
# The engines' published serving images at the release the plan's constants describe (data/engines.yaml `version`):
# the newest release with >= 50 rows in the fit's data (data/measurements/aiconfigurator/silicon_calibration.csv
# backend_version: vLLM 0.18.0 124 rows, SGLang 0.5.9 405, TensorRT-LLM 1.2.0rc6.post3 88). LMDeploy's fitted
# TurboMind v0.1.0a1 predates these api_server flags; its memory rule and flags were read at InternLM/lmdeploy@1263d5c
# (lmdeploy/version.py 0.16.0), that release's image. llama.cpp's fitted build is "not stated" (May 2024): the
# rolling CUDA server image, with a note.
IMAGE_VERSIONS = {"vllm": "0.18.0", "sglang": "0.5.9", "tensorrt-llm": "1.2.0rc6.post3", "lmdeploy": "0.16.0"}
IMAGES = {
    "vllm": f"vllm/vllm-openai:v{IMAGE_VERSIONS['vllm']}",
    "sglang": f"lmsysorg/sglang:v{IMAGE_VERSIONS['sglang']}",
    "tensorrt-llm": f"nvcr.io/nvidia/tensorrt-llm/release:{IMAGE_VERSIONS['tensorrt-llm']}",
    "llama.cpp": "ghcr.io/ggml-org/llama.cpp:server-cuda",
    "lmdeploy": f"openmmlab/lmdeploy:v{IMAGE_VERSIONS['lmdeploy']}",
}
UNPINNED_NOTE = "llama.cpp: the fitted build is not stated (May 2024); pin server-cuda-bNNNN to the build you tested"


@dataclass(frozen=True)
class LaunchPlan:
    """Launch lines per role, files they read, and a manifest for --target k8s (`launch --json`'s contract)."""

    engine: str
    target: str
    nodes: int  # nodes (pods) of one instance
    gpus_per_node: int
    replicas: int
    commands: tuple[Command, ...]
    files: dict[str, str] = field(default_factory=dict)
    manifest: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def script(self) -> str:
        """A shell script: the files as here-documents, then each role's line (for a download)."""
        out = [
            "#!/bin/sh",
            f"# {self.engine}: {self.replicas} replica(s) of {self.nodes} node(s) × {self.gpus_per_node} GPU(s)",
        ]
        for name, text in self.files.items():
            out += [f"cat > {name} <<'EOF'", text.rstrip("\n"), "EOF"]
        for c in self.commands:
            out += [f"# {c.role}", c.text]
        out += [f"# note: {n}" for n in self.notes]
        return "\n".join(out) + "\n"

    def to_dict(self) -> dict:
        return {
            "engine": self.engine,
            "target": self.target,
            "commands": {c.role: c.text for c in self.commands},
            "manifest": self.manifest,
            "files": dict(self.files),
            "replicas": self.replicas,
            "nodes_per_replica": self.nodes,
            "gpus_per_node": self.gpus_per_node,
            "notes": list(self.notes),
        }


def settings_for(r: Resolved) -> Settings:
    """The launch settings of a resolved scenario (one instance)."""
    d = r.deployment
    node = r.gpu.gpus_per_node
    plan = plan_memory(r)
    free = r.gpu.usable_memory_bytes - plan.weight_bytes_per_gpu
    share = plan.kv_pool_bytes_per_gpu / free if free > 0 else 0.0
    moe = r.model.is_moe
    return Settings(
        model=r.model.name,
        tp=d.tensor_parallel_size,
        dp=d.data_parallel_size,
        pp=d.pipeline_parallel_size,
        ep=d.expert_parallel_size if moe else 1,
        moe_tp=d.moe_tensor_parallel_size if moe else 1,
        gpus=d.gpus_per_replica,
        nodes=-(-d.gpus_per_replica // node),
        node_gpus=min(d.gpus_per_replica, node),
        max_model_len=r.max_model_len,
        max_num_seqs=d.max_num_seqs,
        max_batched_tokens=d.max_num_batched_tokens,
        block_size=d.block_size,
        util=d.gpu_memory_utilization,
        free_share=round(min(max(share, 0.01), 0.99), 2),
        kv=r.kv.id,
        weights=r.weights.id,
        checkpoint_weights=r.model.quantized_weights or "bf16",
        prefix_caching=d.enable_prefix_caching,
        eager=d.enforce_eager,
        a2a_backend=d.moe_a2a_backend,
        deepep_mode=d.deepep_mode,
        two_batch_overlap=d.enable_two_batch_overlap,
        eplb=d.enable_eplb,
        redundant_experts=d.ep_num_redundant_experts,
        mixed_chunk=d.enable_mixed_chunk,
        recv_interval=d.scheduler_recv_interval,
        # the fraction SGLang's pool is planned with (planner.memory.engine_pool): the user's, else SGLang's default
        mem_fraction=sglang_fraction(r.gpu.usable_memory_bytes, d),
        batch_wait=(d.batch_wait_timeout_iters, d.batch_wait_max_tokens_ratio),
        num_experts=r.model.num_experts,
    )


def served_model(model: str) -> str | None:
    """What the engine loads for a `--model` that is a path: the folder holding its config.json (an engine reads
    the weights and tokenizer beside it); None for a preset id (the engines fetch it by its Hugging Face id)."""
    if model.lower() in {p.lower() for p in model_presets()}:
        return None
    path = Path(model)
    try:
        if not path.exists():
            return None
    except (OSError, ValueError):  # not a usable path (get_model has said so already)
        return None
    return str(path.parent if path.is_file() else path)


def launch_plan(r: Resolved, engine: str, target: str = "shell", model_path: str | None = None) -> LaunchPlan:
    """The launch lines (and for k8s the manifest) of the scenario's deployment on `engine`; `model_path` (a
    folder, served_model) replaces the model's name in the lines."""
    if engine not in BUILDERS:
        raise InputError("--engine", f"no launch line for {engine!r}; one of {', '.join(BUILDERS)}")
    if target not in TARGETS:
        raise InputError("--target", f"must be one of {', '.join(TARGETS)}, got {target!r}")
    s = settings_for(r)
    s = replace(s, model=model_path) if model_path else s
    notes: list[str] = [f"{model_path}: the same folder must be at that path on every node"] if model_path else []
    files: dict[str, str] = {}
    commands = tuple(BUILDERS[engine](s, notes, files))
    plan = LaunchPlan(engine, target, s.nodes, s.node_gpus, r.deployment.num_replicas, commands, files)
    manifest = k8s_manifest(plan, s.model) if target != "shell" else None
    notes += [UNPINNED_NOTE] if target != "shell" and engine not in IMAGE_VERSIONS else []
    return LaunchPlan(**{**plan.__dict__, "manifest": manifest, "notes": tuple(notes)})


LEADER = {"servingplan/pod": "leader"}  # a LeaderWorkerSet's leader pods (they serve HTTP): a Service selects them


class _PlainDumper(yaml.SafeDumper):
    """YAML without anchors and aliases: every pod template spelled out, as kubectl users read them."""

    def ignore_aliases(self, data) -> bool:
        return True


def dump_yaml(doc: dict) -> str:
    return yaml.dump(doc, Dumper=_PlainDumper, sort_keys=False)


MAX_NAME = 50  # DNS-1123 labels allow 63; LeaderWorkerSet and StatefulSet pods append group and worker indices


def _slug(text: str) -> str:
    """Lowercase ASCII letters, digits and single '-': accents folded (NFKD), anything else a '-'."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return re.sub(r"[^a-z0-9]+", "-", folded).strip("-")


def k8s_name(model: str, role: str = "") -> str:
    """A DNS-1035 label (a Service's name: starts with a letter, ends alphanumeric, ≤ MAX_NAME) for `role`'s
    objects of `model`. A name cut to fit, or with characters outside ASCII, carries the first 8 hex digits of the
    model id's SHA-1, so two long or non-ASCII ids never share a name; the role comes last, so the prefill, decode
    and router objects of one model never do either."""
    last = model.split("/")[-1]
    base = _slug(last) or "model"
    base = base if base[0].isalpha() else f"m-{base}"
    whole = "-".join(p for p in (base, role) if p)
    if len(whole) <= MAX_NAME and last.isascii():
        return whole
    digest = hashlib.sha1(model.encode("utf-8")).hexdigest()[:8]
    room = MAX_NAME - len(digest) - 1 - (len(role) + 1 if role else 0)
    return "-".join(p for p in (base[:room].rstrip("-"), digest, role) if p)


def _pod_spec(plan: LaunchPlan, role: str, env: list[dict]) -> dict:
    """One pod: the engine image running `role`'s line, its node's GPUs, a memory-backed /dev/shm."""
    command = next(c for c in plan.commands if c.role == role)
    script = "".join(f"cat > {n} <<'EOF'\n{t}EOF\n" for n, t in plan.files.items()) + command.text
    return {
        "containers": [
            {
                "name": plan.engine.replace(".", "-"),
                "image": IMAGES[plan.engine],
                "command": ["/bin/sh", "-c", script],
                "env": env,
                "ports": [{"containerPort": PORT}],
                "resources": {"limits": {"nvidia.com/gpu": plan.gpus_per_node}},
                "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
            }
        ],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
    }


def k8s_manifest(plan: LaunchPlan, model: str, role: str = "") -> str:
    """The plan's pods under its target (planner.capacity.manifest_docs) as YAML text: for k8s a Deployment
    (one-node instances) or a LeaderWorkerSet (multi-node); for lws always a LeaderWorkerSet (groups of one pod
    for a one-node instance); for kserve an InferenceService (one-node instances only)."""
    name = k8s_name(model, role)
    labels = {"app": name}
    if plan.target == "kserve":
        if plan.nodes > 1:
            raise InputError("--target", f"KServe's predictor runs one pod per instance; {plan.nodes} nodes: use lws")
        pod = _pod_spec(plan, "server", [])
        pod["containers"][0]["name"] = "kserve-container"  # KServe's name for a custom predictor's container
        return dump_yaml(inference_service(name, labels, pod, plan.replicas, plan.replicas))
    if plan.nodes == 1 and plan.target != "lws":
        return dump_yaml(deployment(name, labels, _pod_spec(plan, "server", []), plan.replicas))
    env = [
        {"name": "LEADER_IP", "value": "$(LWS_LEADER_ADDRESS)"},
        {"name": "NODE_RANK", "value": "$(LWS_WORKER_INDEX)"},
    ]
    roles = {c.role for c in plan.commands}
    leader, worker = ("leader", "worker") if "leader" in roles else ("server", "server")
    lead = (LEADER, _pod_spec(plan, leader, env))
    return dump_yaml(leader_worker_set(name, labels, lead, _pod_spec(plan, worker, env), plan.replicas, plan.nodes))
