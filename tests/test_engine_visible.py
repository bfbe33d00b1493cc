"""The scenario's engine is visible: the Traffic and Capacity pages name its scheduler policy and memory rule, and
`memory --suggest` offers the nearest fixes."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT
from streamlit.testing.v1 import AppTest

from planner.core.engine import engines
from planner.core.scenario import Scenario


def captions(at: AppTest) -> str:
    return "\n".join(c.value for c in at.caption)


def test_traffic_page_names_the_engines_scheduler_and_memory_rule():
    at = AppTest.from_file(str(ROOT / "app_pages" / "traffic.py"), default_timeout=90).run()
    assert not at.exception, at.exception
    assert "scheduler vllm-v1" in captions(at) and "KV memory vllm-profiler" in captions(at)
    at.selectbox(key="load_engine").set_value("tensorrt-llm").run()
    assert not at.exception, at.exception
    text = captions(at)
    assert "scheduler guaranteed-no-evict" in text and "KV memory trtllm-free-fraction" in text


def test_capacity_page_names_the_scenarios_engine():
    at = AppTest.from_file(str(ROOT / "app_pages" / "capacity.py"), default_timeout=180)
    at.session_state["scenario"] = Scenario(engine="sglang", deployment={"max_model_len": 8192})
    at.run()
    assert not at.exception, at.exception
    assert f"Engine: {engines()['sglang'].summary}." in captions(at)


def test_memory_suggest_lists_the_nearest_fixes():
    out = subprocess.run(
        [sys.executable, "-m", "planner", "memory", "--model", "meta-llama/Llama-3.1-70B", "--suggest", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert not data["fits"] and data["blockers"][0]["kind"] == "weights_exceed_budget"
    # 141 GB of BF16 weights on one 80 GB H100: four GPUs per replica (TP 4), or a GPU with more memory
    assert data["fixes"][0] == {"kind": "TP", "label": "TP 4 (4 GPUs per replica)", "requests": 3}
    assert [f["kind"] for f in data["fixes"]] == ["TP", "GPU"] and all(f["requests"] >= 1 for f in data["fixes"])
