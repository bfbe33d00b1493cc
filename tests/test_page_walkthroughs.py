"""The Walkthroughs page, headless: primer numbers by default, inputs recompute, the practice flow scores."""

from __future__ import annotations

import pytest
from conftest import ROOT
from streamlit.testing.v1 import AppTest

from planner.core.scenario import Scenario
from planner.core.specs import Deployment
from planner.teaching.practice import generate


def page() -> AppTest:
    return AppTest.from_file(str(ROOT / "app_pages" / "walkthroughs.py"), default_timeout=30).run()


def shown(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_defaults_show_the_primer_numbers():
    at = page()
    assert not at.exception
    text = shown(at)
    for number in ("524,288 B", "2.10 GB", "33.6 GB", "16 requests", "31 requests", "9 requests", "0.52 GB"):
        assert number in text
    assert "`2 × 32 × 32 × 128 × 2`" in text  # the numbers substituted


def test_each_walkthrough_shows_its_primer_results():
    at = page()
    expected = {
        "weights": ("14.0 GB", "140.0 GB"),
        "token-positions": ("644,850 positions", "2,299 positions"),
        "latency": ("240 ms", "7.715 s", "97%", "7.615 s", "3.965 s", "90 ms"),
        "throughput": ("25 tokens/s", "800 tokens/s", "1.6×"),
        "six-requests": ("13 steps", "9 steps", "61.5%", "88.9%", "4.00 steps", "1.83 steps"),
    }
    for name, numbers in expected.items():
        at.radio(key="wt_name").set_value(name).run()
        assert not at.exception and not at.error
        text = shown(at)
        assert all(n in text for n in numbers), (name, numbers)


def test_changing_an_input_recomputes():
    at = page()
    at.number_input(key="wt_kv-cache_tokens_per_request").set_value(8000).run()
    text = shown(at)
    assert "4.19 GB" in text and "2.10 GB" not in text
    at.button(key="wt_reset").click().run()
    assert "2.10 GB" in shown(at)


def test_bad_input_names_the_field():
    at = page()
    at.radio(key="wt_name").set_value("six-requests").run()
    at.text_input(key="wt_six-requests_output_tokens").set_value("2, eight").run()
    assert not at.exception
    assert any("output_tokens" in e.value for e in at.error)


def test_load_the_sidebar_scenario():
    at = AppTest.from_file(str(ROOT / "app_pages" / "walkthroughs.py"), default_timeout=30)
    at.session_state["scenario"] = Scenario(
        model="meta-llama/Llama-3.1-8B", gpu="A100-80GB", context_tokens=4096, deployment=Deployment(max_model_len=8192)
    )
    at.run()
    at.button(key="wt_load").click().run()
    assert not at.exception
    assert at.session_state["wt_kv-cache_num_kv_heads"] == 8  # Llama-3.1-8B's KV heads
    assert "131,072 B" in shown(at)  # 2 × 32 × 8 × 128 × 2
    assert any("Loaded from the sidebar scenario" in i.value for i in at.info)


def test_practice_answer_flow_updates_the_score():
    at = page()
    assert at.metric[0].value == "0 / 0"
    q = generate(1, 0)
    at.text_input(key="wt_answer").set_value(q.solution[-1].result).run()
    at.button(key="wt_check").click().run()
    assert not at.exception
    assert at.metric[0].value == "1 / 1"
    assert any("Correct" in s.value for s in at.success)
    at.button(key="wt_check").click().run()  # checking again does not count twice
    assert at.metric[0].value == "1 / 1"
    at.button(key="wt_next").click().run()
    wrong = generate(1, 1)
    at.text_input(key="wt_answer").set_value(str(wrong.answer * 3 + 7)).run()
    at.button(key="wt_check").click().run()
    assert at.metric[0].value == "1 / 2"
    assert any("Not quite" in e.value for e in at.error)
    assert "Worked solution" in shown(at)


def test_practice_typo_is_explained_not_scored():
    at = page()
    at.text_input(key="wt_answer").set_value("about right").run()
    at.button(key="wt_check").click().run()
    assert at.metric[0].value == "0 / 0" and any("type a number" in e.value for e in at.error)


def test_design_explainer_is_there():
    text = shown(page())
    for idea in ("Queue", "Max batch size", "latency-throughput dial", "Bucketing", "Backpressure", "Continuous"):
        assert idea in text


@pytest.mark.parametrize(
    "kind, typed",
    [
        ("ttft", lambda a: f"{a / 1e3:g} s"),  # "0.32 s" for an answer in ms (issue 16: judged 99.9% off)
        ("ttft", lambda a: f"{a:g} ms"),
        ("token-positions", lambda a: f"{a / 1e6:.4f} million"),  # "3.45 million" (judged 100% off)
        ("end-to-end", lambda a: f"{a * 1e3:.0f} ms"),
    ],
)
def test_practice_answers_accept_units(kind, typed):
    at = page()
    at.session_state["wt_kinds"] = [kind]
    at.run()
    q = generate(1, 0, (kind,))
    at.text_input(key="wt_answer").set_value(typed(q.answer)).run()
    at.button(key="wt_check").click().run()
    assert not at.exception
    assert any("Correct" in s.value for s in at.success), [e.value for e in at.error]


def test_the_throughput_solution_uses_only_what_the_question_gives():
    at = page()
    at.session_state["wt_kinds"] = ["server-throughput"]
    at.run()
    q = generate(1, 0, ("server-throughput",))
    at.text_input(key="wt_answer").set_value(str(q.answer * 3 + 7)).run()
    at.button(key="wt_check").click().run()
    text = shown(at)
    assert "Worked solution" in text
    assert [s.number for s in q.solution] == ["4"]  # was steps 1-4: queue 40 ms, a 2,000-token prompt, 300 tokens
    for unstated in ("2,000", "Queue wait", "Prefill"):
        assert unstated not in " ".join(f"{s.title} {s.formula} {s.substituted}" for s in q.solution)


def test_a_unit_error_quotes_what_was_typed():
    at = page()
    at.session_state["wt_kinds"] = ["ttft"]
    at.run()
    at.text_input(key="wt_answer").set_value("3 GB").run()
    at.button(key="wt_check").click().run()
    assert any("'GB' is not a unit of ms" in e.value for e in at.error)  # was 'gb'
