"""Each engine's own rule on a token budget below max_num_seqs (issue 56): vLLM refuses to start
(vllm/config/scheduler.py _verify_args), TensorRT-LLM starts and runs at most max_num_tokens generation requests an
iteration, SGLang runs its decode batch outside the prefill budget."""

from __future__ import annotations

import pytest

from planner.cli import main
from planner.core.errors import InputError
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from planner.sim.serving import Replica, run_serving, scheduler_config_for
from planner.traffic.generators import open_loop


def _resolved(engine, seqs=64, tokens=32):
    d = Deployment(max_num_seqs=seqs, max_num_batched_tokens=tokens, max_model_len=4096)
    return resolve(Scenario(model="meta-llama/Llama-3.1-8B", gpu="H100-SXM", engine=engine, deployment=d))


def test_vllm_refuses_a_budget_below_max_num_seqs_naming_the_flag():
    with pytest.raises(InputError) as err:
        scheduler_config_for(_resolved("vllm"))
    assert "vLLM refuses to start" in err.value.message and "--max-num-batched-tokens" in err.value.message


def test_tensorrt_llm_starts_and_runs_at_most_its_token_budget_of_requests():
    r = _resolved("tensorrt-llm")
    assert scheduler_config_for(r).running_cap == 32  # 64 sequences, 32 tokens an iteration
    res = run_serving(Replica(r), open_loop(200, 1e6, prompt="fixed:1", output="fixed:200", seed=0))
    assert int(res.steps.num_running.max()) == 32 and res.requests.finished.all()


def test_sglang_decodes_beyond_its_prefill_budget():
    r = _resolved("sglang")
    assert scheduler_config_for(r).running_cap == 64
    res = run_serving(Replica(r), open_loop(200, 1e6, prompt="fixed:1", output="fixed:200", seed=0))
    assert int(res.steps.num_running.max()) > 32


def test_the_cli_takes_tensorrt_llms_published_1536_tokens_with_2048_sequences(capsys):
    argv = ["simulate", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "H100-SXM", "--engine", "tensorrt-llm",
            "--max-num-seqs", "2048", "--max-num-batched-tokens", "1536", "--rate", "5", "--num-requests", "50",
            "--json"]  # fmt: skip
    assert main(argv) == 0
    capsys.readouterr()
    argv[argv.index("tensorrt-llm")] = "vllm"
    assert main(argv) == 2
    assert "--max-num-batched-tokens" in capsys.readouterr().err
