"""The serving images `launch` puts in its manifests: pinned to the release the plan's constants were fitted on."""

from __future__ import annotations

import csv
from collections import Counter

import yaml

from planner.capacity.launch import IMAGE_VERSIONS, IMAGES, UNPINNED_NOTE, launch_plan
from planner.core.paths import measurements_dir
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment

BACKENDS = {"vllm": "vllm", "sglang": "sglang", "tensorrt-llm": "trtllm"}  # silicon_calibration.csv backend


def _rows_per_version() -> Counter:
    path = measurements_dir() / "aiconfigurator" / "silicon_calibration.csv"
    with path.open(newline="") as f:
        return Counter((row["backend"], row["backend_version"]) for row in csv.DictReader(f))


def test_images_are_the_fitted_releases_not_latest():
    rows = _rows_per_version()
    assert rows[("vllm", "0.18.0")] == 124 and rows[("sglang", "0.5.9")] == 405
    assert rows[("trtllm", "1.2.0rc6.post3")] == 88
    for engine, backend in BACKENDS.items():
        assert rows[(backend, IMAGE_VERSIONS[engine])] >= 50
        assert IMAGES[engine].endswith(IMAGE_VERSIONS[engine]) and not IMAGES[engine].endswith(":latest")
    assert IMAGES["vllm"] == "vllm/vllm-openai:v0.18.0" and IMAGES["lmdeploy"] == "openmmlab/lmdeploy:v0.16.0"


def test_manifest_runs_the_pinned_image_and_llama_cpp_says_it_is_not_pinned():
    r = resolve(Scenario(model="meta-llama/Llama-3.1-8B", gpu="H100-SXM", deployment=Deployment(max_model_len=8192)))
    pod = yaml.safe_load(launch_plan(r, "sglang", "k8s").manifest)["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "lmsysorg/sglang:v0.5.9"
    assert UNPINNED_NOTE in launch_plan(r, "llama.cpp", "k8s").notes
    assert UNPINNED_NOTE not in launch_plan(r, "vllm", "k8s").notes


def test_lmdeploy_is_launched_on_turbomind_the_engine_it_is_sized_for():
    dep = Deployment(max_model_len=8192, num_gpus=2, tensor_parallel_size=2, enforce_eager=True)
    r = resolve(Scenario(model="meta-llama/Llama-3.1-8B", gpu="H100-SXM", deployment=dep, engine="lmdeploy"))
    assert r.engine.memory == "lmdeploy-free-fraction"  # TurboMind's rule (data/engines.yaml)
    plan = launch_plan(r, "lmdeploy")
    argv = plan.commands[0].argv
    assert argv[argv.index("--backend") + 1] == "turbomind" and argv[argv.index("--tp") + 1] == "2"
    assert "--eager-mode" not in argv and any("TurboMind has no eager mode" in n for n in plan.notes)
