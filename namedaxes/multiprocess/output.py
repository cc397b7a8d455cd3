"""What the workers print, made readable: noise filtered out, a stack dump cut to the job's thread."""

from __future__ import annotations

import re

__all__ = ["filter_noise"]

# Lines that say nothing when things go right: gloo's peer connections (printed
# at the first collective) and JAX's notice that it caught a signal.
# (gloo's lines come from several threads at once and can be interleaved mid-line)
_NOISE = re.compile(
    r"\[Gloo\] Rank|^\d+ is connected to \d+ peer ranks\. Expected number of connected"
    r"|preemption_notifier\.cc:\d+\] SIGTERM caught"
    r"|^-{20}$|^For simplicity, JAX has removed its internal frames"
)


def filter_noise(text: str) -> str:
    """`text` without gloo's connection lines, JAX's SIGTERM notices and its traceback footnote."""
    return "\n".join(line for line in text.splitlines() if not _NOISE.search(line))


def main_thread_stack(text: str) -> str:
    """From a faulthandler dump, keep the job's thread: drop the other threads' stacks."""
    blocks = re.split(r"\n(?=Thread 0x|Current thread 0x)", text)
    dumps = [b for b in blocks if b.startswith(("Thread 0x", "Current thread 0x"))]
    if not dumps:
        return text
    kept = [b for b in dumps if "in serve" in b] or dumps
    before = [b for b in blocks if b not in dumps]
    return "\n".join(before + [kept[-1]])
