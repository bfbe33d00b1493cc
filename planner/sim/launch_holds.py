"""The engines' launch-specific holds (docs/schedulers.md): SGLang's --scheduler-recv-interval (arrivals are taken
only at a receive poll) and TensorRT-LLM's attention-DP balance and batch waiting (a step's waiting prompts held
back). A mixin of Replica (planner/sim/simulator.py), which holds the state; SchedulerConfig's notes give the rules.
"""

from __future__ import annotations


class LaunchHolds:
    """Replica's receive polls and prompt holds (state: Replica)."""

    def _poll_arrivals(self) -> None:
        """Take the arrivals due, at a receive poll (every step; with a receive interval N, after a step with prompt
        tokens, after N decode steps since the last poll, or when idle)."""
        if self.recv_interval > 1:
            if self.recv_counter < self.recv_interval and (self.running or self.waiting):
                return
            self.recv_counter = 0
        self._accept_arrivals()

    def _prompts_held(self, budget: int) -> bool:
        """TensorRT-LLM's holds of this step's waiting prompts: attention-DP balance, else batch waiting (the engine
        checks batch waiting only without attention DP); counted only on steps that could take prompts."""
        if self.balance_limit:
            return self._balance_holds()
        return self.batch_wait and self._batch_wait_holds(budget)

    def _balance_holds(self) -> bool:
        """TensorRT-LLM's attention-DP balance: hold waiting prompts this step? (SchedulerConfig note)"""
        if not self.waiting or not self.decoders.count or self.balance_held_steps >= self.balance_limit:
            self.balance_held_steps = 0  # nothing to hold, nothing decoding (released at once), or timed out
            return False
        self.balance_held_steps += 1
        return True

    def _batch_wait_holds(self, budget: int) -> bool:
        """TensorRT-LLM's batch waiting: hold this step's prompts? (SchedulerConfig note) The prompts are those that
        fit the step whole, first come first served; the decodes count one token each."""
        if not self.waiting or not self.decoders.count:
            return False
        tokens = 0
        for i in self.waiting:
            if tokens + self.prompt_tokens[i] > budget:
                break
            tokens += self.prompt_tokens[i]
        cfg = self.cfg
        enough = tokens + self.decoders.count >= cfg.batch_wait_max_tokens_ratio * cfg.max_num_batched_tokens
        if tokens == 0 or enough or self.batch_wait_steps >= cfg.batch_wait_timeout_iters:
            self.batch_wait_steps = 0
            return False
        self.batch_wait_steps += 1
        return True
