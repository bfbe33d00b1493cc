"""What the traffic is and what it must meet: named traffic profiles, a TrafficSpec (the traffic without its
rate) and the SLO. Plain specs with no behaviour beyond validation: the scenario, the simulator glue, capacity and
the pages all read them from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ConfigDict, Field, PositiveFloat, PositiveInt, model_validator

from planner.core.bounded import BoundedModel


@dataclass(frozen=True)
class Profile:
    """A named traffic shape: lengths (and prefix ids) from a trace, or length distributions."""

    label: str
    trace: str | None = None  # a shared trace name; None = custom distributions
    prefix_caching: bool = False  # the profile's default
    note: str = ""


PROFILES = {
    "chat": Profile(
        "chat (Azure conversation trace lengths)",
        "azure_conv",
        note="Azure 2023 conversation trace: prompts ~1,155 tokens, outputs ~211 on average.",
    ),
    "code": Profile(
        "code (Azure code trace)",
        "azure_code",
        note="Azure 2023 code trace: long prompts (~2,048 tokens), short outputs (~28).",
    ),
    "rag": Profile(
        "long-context RAG (Mooncake, prefix sharing)",
        "mooncake",
        prefix_caching=True,
        note="Mooncake FAST'25 trace: ~12,000-token prompts sharing 512-token prefix blocks.",
    ),
    "custom": Profile("custom", note="Length distributions and an arrival process of your choice."),
    "upload": Profile("upload a trace", note="Azure CSV, Mooncake JSONL or CSV arrival_s,prompt_tokens,output_tokens."),
}


class SLO(BoundedModel):
    """Latency targets one replica must meet (seconds)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ttft_p95_s: PositiveFloat = 2.0
    tpot_p95_s: PositiveFloat = 0.1
    e2e_p99_s: PositiveFloat | None = None


class TrafficSpec(BoundedModel):
    """Traffic without its rate: a load_sweep profile (chat/code/rag trace lengths, or custom distributions),
    the arrival process and the request count per simulation; picklable and hashable (a cache key)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    profile: str = "chat"
    prompt: str = "lognormal:mean=1000,sigma=0.8"  # custom profile only
    output: str = "lognormal:mean=200,sigma=0.8"
    arrival: str = "poisson"  # poisson|gamma|constant (custom) or poisson|trace (trace profiles)
    cv: PositiveFloat = 1.0
    num_requests: PositiveInt = 1000
    seed: int = Field(0, ge=0)
    trace_path: str = ""  # the upload profile: a trace file
    prefix_caching: bool = False
    # sessions that come back (planner/traffic/sessions.py; custom profile only): turns per session, each
    # re-sending the history behind a shared system prompt; `prompt` is a later turn's new message, `first_input`
    # the first turn's (None: `prompt`); the rate stays requests/s (sessions start at rate / turns)
    turns: int | None = Field(None, ge=1, le=10_000)
    system_prompt_tokens: int = Field(0, ge=0)
    think_time_s: float = Field(0.0, ge=0)
    first_input: str | None = None
    # the custom profile's prompts drawn at random from this many distinct prompts, as aiperf's synthetic dataset
    # does (planner.traffic.generators.pooled_prompts); 0: a new prompt for every request
    prompt_pool: int = Field(0, ge=0, le=10_000_000)

    @property
    def is_sessions(self) -> bool:
        return self.turns is not None or self.system_prompt_tokens > 0

    @model_validator(mode="after")
    def profile_is_known(self) -> TrafficSpec:
        if self.profile not in PROFILES:
            raise ValueError(f"profile must be one of {', '.join(PROFILES)}")
        if self.profile == "upload" and not self.trace_path:
            raise ValueError("profile upload needs trace_path")
        if self.is_sessions and self.profile != "custom":
            raise ValueError("sessions (turns, a shared system prompt) take the custom profile's lengths")
        if (self.turns or 1) > 1 and self.think_time_s <= 0:
            raise ValueError("think_time_s: sessions of more than one turn need a think time > 0")
        if self.is_sessions and self.arrival != "poisson":
            raise ValueError("arrival: sessions start as a Poisson process")
        if self.prompt_pool and (self.profile != "custom" or self.is_sessions):
            raise ValueError(
                "prompt_pool: applies to the custom profile's generated prompts (a trace or sessions carry their own)"
            )
        return self
