"""The KV block pool, counted rather than listed, with a reference-counted prefix cache.

A request's KV cache is ceil(tokens / block_size) blocks. Blocks private to one request are only counted here
(the simulator knows how many each request holds). Blocks holding a full prefix block (one hash id, which covers
`blocks_per_prefix` KV blocks) are shared: each hash id has a reference count; at zero it stays cached but
becomes evictable, and the least recently released is evicted first when an allocation needs room (as vLLM's
free-block queue does). Allocatable = free + evictable.
"""
from __future__ import annotations

from collections import OrderedDict


class BlockPool:
    def __init__(self, num_blocks: int, blocks_per_prefix: int = 1):
        self.num_blocks = num_blocks
        self.blocks_per_prefix = blocks_per_prefix
        self.num_used = 0  # private blocks + every cached prefix block (referenced or evictable)
        self.peak_used = 0
        self.num_evictions = 0  # prefix entries evicted
        self.refs: dict[int, int] = {}  # hash id -> reference count (> 0)
        self.evictable: OrderedDict[int, None] = OrderedDict()  # hash ids at count 0, least recent first

    @property
    def num_evictable_blocks(self) -> int:
        return len(self.evictable) * self.blocks_per_prefix

    @property
    def num_allocatable(self) -> int:
        return self.num_blocks - self.num_used + self.num_evictable_blocks

    @property
    def num_active(self) -> int:
        """Blocks held by running requests (what vLLM reports as KV cache usage)."""
        return self.num_used - self.num_evictable_blocks

    def allocate(self, num: int) -> bool:
        """Take `num` blocks, evicting least-recently-used cached prefixes if needed; False if impossible."""
        if num <= 0:
            return True
        if num > self.num_allocatable:
            return False
        while self.num_blocks - self.num_used < num:
            self.evictable.popitem(last=False)
            self.num_used -= self.blocks_per_prefix
            self.num_evictions += 1
        self.num_used += num
        self.peak_used = max(self.peak_used, self.num_used)
        return True

    def free(self, num: int) -> None:
        self.num_used -= num

    def num_cached_prefix(self, hash_ids, max_entries: int) -> int:
        """How many of the first `max_entries` hash ids are cached, counting from the first (exact-prefix match)."""
        num = 0
        for h in hash_ids[:max_entries]:
            if h not in self.refs and h not in self.evictable:
                break
            num += 1
        return num

    def num_evictable_among(self, hash_ids) -> int:
        return sum(1 for h in hash_ids if h in self.evictable)

    def acquire(self, hash_ids) -> None:
        """Reference cached entries (a prefix hit): evictable ones become referenced again."""
        for h in hash_ids:
            if h in self.evictable:
                del self.evictable[h]
                self.refs[h] = 1
            else:
                self.refs[h] += 1

    def register(self, h: int) -> bool:
        """Publish a block a request just computed as cached (its blocks change owner, no new space).
        False if an equal block is already cached: the request keeps its copy private."""
        if h in self.refs or h in self.evictable:
            return False
        self.refs[h] = 1
        return True

    def release(self, hash_ids) -> None:
        """Drop one reference each; at zero the entry becomes the most recently used evictable one."""
        for h in hash_ids:
            count = self.refs[h] - 1
            if count:
                self.refs[h] = count
            else:
                del self.refs[h]
                self.evictable[h] = None
