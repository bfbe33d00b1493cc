"""Every primer worked number, pinned through the walkthroughs' steps (the numbers the page and CLI print)."""

from __future__ import annotations

import pytest

from planner.core.errors import InputError
from planner.core.scenario import Scenario, resolve
from planner.core.specs import Deployment
from planner.teaching.from_scenario import inputs_from_scenario
from planner.teaching.inputs import KVCacheInputs, SixRequestsInputs, build_inputs
from planner.teaching.walkthroughs import WALKTHROUGHS, run_walkthrough


def steps(name: str, **inputs) -> dict:
    w = WALKTHROUGHS[name]
    return {s.number: s for s in run_walkthrough(name, w.inputs(**inputs))}


def test_kv_cache_primer_section_3():
    s = steps("kv-cache")
    assert s["1"].value == 524_288 and s["1"].result == "524,288 B"  # 2 × 32 × 32 × 128 × 2
    assert s["1"].substituted == "2 × 32 × 32 × 128 × 2"
    assert s["2"].result == "2.10 GB"  # 524,288 × 4,000 = 2.097 GB
    assert s["3"].result == "33.6 GB"  # 16 × 2.097
    assert (s["4a"].value, s["4b"].value, s["5"].value) == (16, 31, 9)  # 34, 66, 20.5 GB free
    assert s["5"].result == "9 requests"
    assert s["6"].result == "0.52 GB" and "4× smaller" in s["6"].note  # 8 KV heads of 32


def test_weights_primer_section_4():
    s = steps("weights")
    assert [s[n].value for n in "1234"] == [14, 7, 3.5, 140]  # GB
    assert s["4"].result == "140.0 GB"
    assert s["5"].value == 2 and "does not fit one 80 GB GPU" in s["5"].note


def test_token_positions_primer_section_3():
    s = steps("token-positions")
    assert s["1"].result == "644,850 positions"  # 2,000 + 2,001 + … + 2,299
    assert s["2"].result == "2,299 positions"


def test_latency_primer_section_5_steps_1_to_5():
    s = steps("latency")
    assert s["1a"].result == "200 ms"  # 2,000 / 10,000
    assert s["1b"].result == "240 ms"  # 40 + 200
    assert s["2"].result == "40 tokens/s"  # 1 / 0.025
    assert s["3a"].result == "7.715 s" and s["3a"].value == pytest.approx(7.715)  # 0.240 + 299 × 0.025
    assert s["3b"].result == "97%"
    assert s["4a"].result == "7.615 s" and "0.100 s gain" in s["4a"].note  # halve the prompt
    assert s["4b"].result == "3.965 s"  # 0.240 + 149 × 0.025
    assert s["5"].result == "90 ms" and "240 → 90 ms" in s["5"].note  # 500 tokens = 50 ms


def test_the_bigger_lever_is_computed_not_asserted():
    assert "output length is the bigger lever" in steps("latency")["4b"].note  # 3.750 s against 0.100 s
    # README's example: the output already at the cap gains nothing, so the prompt is the bigger lever
    note = steps("latency", output_tokens=150)["4b"].note
    assert "0.000 s gain" in note and "output length is the bigger lever" not in note
    assert "prompt is the bigger lever" in note


def test_latency_against_throughput_primer_section_5():
    s = steps("throughput")
    assert s["2"].result == "25 tokens/s"  # 1 / 0.040
    assert s["3"].value == pytest.approx(12.2)  # 0.240 + 299 × 0.040
    assert s["4"].result == "800 tokens/s"  # 32 / 0.040
    assert s["5"].value == pytest.approx(20)  # 800 / 40
    assert s["6"].result == "1.6×"  # 40 / 25


def test_six_requests_primer_section_6():
    s = steps("six-requests")
    assert (s["2"].value, s["3"].value) == (13, 9)  # static vs continuous end step
    assert (s["4"].result, s["5"].result) == ("61.5%", "88.9%")  # 24 / 39, 24 / 27
    assert s["6"].result == "4.00 steps"  # (0+0+0+8+8+8) / 6
    assert s["7"].result == "1.83 steps" and "11/6" in s["7"].substituted


def test_changing_an_input_recomputes():
    s = steps("kv-cache", tokens_per_request=8000)
    assert s["2"].result == "4.19 GB"  # twice the primer's 2.10 GB
    assert s["4a"].value == 8  # floor(34 / 4.194)
    s = steps("six-requests", slots=6)
    assert s["2"].value == s["3"].value == 8  # everyone runs at once: both end with the longest


def test_every_step_is_complete():
    for name in WALKTHROUGHS:
        for step in run_walkthrough(name):
            assert step.title and step.formula and step.substituted and step.result


def test_bad_inputs_name_the_field():
    with pytest.raises(InputError) as err:
        build_inputs(KVCacheInputs, {"num_kv_heads": 5})
    assert "num_kv_heads" in err.value.message
    with pytest.raises(InputError) as err:
        build_inputs(SixRequestsInputs, {"output_tokens": "2, x"})
    assert err.value.field == "output_tokens"
    assert build_inputs(SixRequestsInputs, {"output_tokens": "2, 8, 4"}).output_tokens == (2, 8, 4)


def test_inputs_from_scenario_take_the_scenario_numbers():
    scenario = Scenario(
        model="meta-llama/Llama-2-7b-hf",
        gpu="A100-80GB",
        context_tokens=4000,
        deployment=Deployment(max_model_len=4096),
    )
    r = resolve(scenario)
    kv = inputs_from_scenario("kv-cache", scenario)
    assert (kv.num_layers, kv.num_kv_heads, kv.head_dim, kv.tokens_per_request, kv.gpu_gb) == (32, 32, 128, 4000, 80)
    s = {x.number: x for x in run_walkthrough("kv-cache", kv)}
    assert s["1"].value == 524_288  # Llama-2-7B is the primer's 7B
    lat = inputs_from_scenario("latency", scenario)
    assert lat.prompt_tokens + lat.output_tokens == r.context_tokens
    assert lat.prefill_tokens_per_s > 0 and lat.tpot_ms > 0
    assert inputs_from_scenario("six-requests", scenario) == WALKTHROUGHS["six-requests"].inputs()
    for name in WALKTHROUGHS:  # every walkthrough runs on every loaded scenario
        run_walkthrough(name, inputs_from_scenario(name, scenario))


@pytest.mark.parametrize(
    "name, setting, field",
    [
        ("six-requests", "output_tokens=9223372036854775808", "output_tokens"),  # overflowed numpy's int64
        ("kv-cache", "num_layers=9007199254740993", "num_layers"),  # passed the inputs, failed in ModelSpec
    ],
)
def test_set_beyond_the_inputs_bounds_names_the_field(name, setting, field, capsys):
    # found by tests/test_properties_cli_more.py::test_walkthrough (hypothesis) in CI: a traceback, not one line
    from planner.cli import main

    assert main(["walkthrough", name, "--set", setting]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and field in err
