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
        if not self.waiting:
            self.balance_held_steps = 0  # nothing to hold
            return False
        # prompts waiting since the last release, which the step's budget left, go unheld: every symmetric rank then
        # has one waiting too
        draining = self.out.arrival_s[self.waiting[0]] <= self.balance_released_s
        if draining or not self._num_decoding() or self.balance_held_steps >= self.balance_limit:
            self.balance_held_steps, self.balance_released_s = 0, self.now  # released: nothing decoding, or timed out
            return False
        self.balance_held_steps += 1
        return True

    def _batch_wait_holds(self, budget: int) -> bool:
        """TensorRT-LLM's batch waiting: hold this step's prompts? (SchedulerConfig note) The prompts are those that
        fit the step whole, first come first served; the decodes count one token each."""
        if not self.waiting:
            return False
        decoding = self._num_decoding()
        if not decoding:
            return False
        tokens = 0
        for i in self.waiting:
            if tokens + self.prompt_tokens[i] > budget:
                break
            tokens += self.prompt_tokens[i]
        cfg = self.cfg
        enough = tokens + decoding >= cfg.batch_wait_max_tokens_ratio * cfg.max_num_batched_tokens
        if tokens == 0 or enough or self.batch_wait_steps >= cfg.batch_wait_timeout_iters:
            self.batch_wait_steps = 0
            return False
        self.batch_wait_steps += 1
        return True

    def _num_decoding(self) -> int:
        """Requests past their prompt: the lock-step decoders, and under speculative decoding (whose requests are
        stepped individually to the end, never joining the lock-step batch) those that have their first token."""
        if not self.spec:
            return self.decoders.count
        generated = self.generated_tokens
        return self.decoders.count + sum(1 for i in self.stepped_individually if generated[i] > 0)
