"""Training of RUBER's unreferenced scorers (``dialeval train ruber [--variant bigru|bert|both]``; the metrics
are ``core/metrics/ruber.py``).

Both scorers learn by negative sampling with the ranking hinge loss J = max(0, Δ - s_U(q, r+) + s_U(q, r-)),
Δ = ``MARGIN`` (Tao et al. 2018, §3.2), on consecutive chitchat-dataset turn pairs split by conversation
(``conv_id % 10 == 0`` held out); quality is the held-out ranking accuracy (true reply above a random one).
"""
from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from core.metrics.ruber import (BERT_UNREF_CKPT, MAX_WORDPIECES, UNREF_CKPT, build_bigru_scorer, build_vector_scorer,
                                load_bigru, load_vector_scorer, pad_ids, static_matrix_hash, static_word_matrix,
                                wordpiece_ids)
from core.settings import SEED
from core.training import log, log_progress, register_trainer, set_threads

MARGIN = 0.5


def split_pool(pool, heldout_mod: int = 10):
    """Train / held-out pair indices, split by conversation (conv_id % heldout_mod == 0 is held out)."""
    held = (pool.conv_id % heldout_mod) == 0
    return np.flatnonzero(~held), np.flatnonzero(held)


def _negatives(rng: np.random.Generator, resp: np.ndarray, n: int) -> np.ndarray:
    """n random replies (text ids) drawn from ``resp`` (a rare draw of the true reply itself is kept)."""
    return resp[rng.integers(0, len(resp), n)]


def _pair_sample(rng, idx: np.ndarray, n: int) -> np.ndarray:
    return idx if n <= 0 or n >= len(idx) else np.sort(rng.choice(idx, size=n, replace=False))


def train_bigru(args: argparse.Namespace) -> dict:
    import torch
    from core.models.checkpoints import save
    from core.models.retrieval import chitchat_pool
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    pool = chitchat_pool()
    tr_all, ho_all = split_pool(pool)
    tr = _pair_sample(rng, tr_all, args.train_pairs)
    ho = _pair_sample(rng, ho_all, args.heldout_pairs)
    log(f"bigru: {len(tr)} training pairs of {len(tr_all)}, {len(ho)} held-out pairs (other conversations)")
    text_ids = np.unique(np.concatenate([pool.utt_idx[tr], pool.resp_idx[tr], pool.utt_idx[ho], pool.resp_idx[ho]]))
    toks = dict(zip(text_ids.tolist(), wordpiece_ids([pool.texts[i] for i in text_ids])))
    model = build_bigru_scorer(static_word_matrix(), args.hidden, args.mlp_hidden, shared=True)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=args.lr)

    def run(q_ids, r_ids):
        q, ql = pad_ids([toks[i] for i in q_ids])
        r, rl = pad_ids([toks[i] for i in r_ids])
        return model(q, ql, r, rl)

    def run_triples(q_ids, pos_ids, neg_ids):
        # the encoder is shared: one packed Bi-GRU pass over queries, true and random replies together
        ids, lens = pad_ids([toks[i] for i in np.concatenate([q_ids, pos_ids, neg_ids])])
        enc = model.encode(model.gru_q, ids, lens)
        n = len(q_ids)
        return model.head(enc[:n], enc[n:2 * n]), model.head(enc[:n], enc[2 * n:])

    ho_rng = np.random.default_rng(args.seed + 1)
    ho_q, ho_pos = pool.utt_idx[ho], pool.resp_idx[ho]
    ho_neg = _negatives(ho_rng, pool.resp_idx[ho], len(ho))  # replies of other held-out pairs

    def evaluate() -> float:
        model.eval()
        with torch.no_grad():
            pos = np.concatenate([run(ho_q[s:s + 512], ho_pos[s:s + 512]).numpy() for s in range(0, len(ho), 512)])
            neg = np.concatenate([run(ho_q[s:s + 512], ho_neg[s:s + 512]).numpy() for s in range(0, len(ho), 512)])
        model.train()
        return float(np.mean(pos > neg) + 0.5 * np.mean(pos == neg))

    t0, best, best_state, history = time.time(), -1.0, None, []
    for ep in range(args.epochs):
        order = rng.permutation(tr)
        neg_all = _negatives(rng, pool.resp_idx[tr], len(order))
        losses = []
        for s in range(0, len(order), args.batch):
            b = order[s:s + args.batch]
            q, pos, neg = pool.utt_idx[b], pool.resp_idx[b], neg_all[s:s + args.batch]
            sp, sn = run_triples(q, pos, neg)
            loss = torch.clamp(MARGIN - sp + sn, min=0).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
            if (s // args.batch) % 25 == 0:
                log(f"  epoch {ep + 1} batch {s // args.batch}/{math.ceil(len(order) / args.batch)} "
                    f"hinge {np.mean(losses[-25:]):.4f} ({time.time() - t0:.0f}s)")
            if args.max_minutes and time.time() - t0 > args.max_minutes * 60:
                break
        acc = evaluate()
        history.append({"epoch": ep + 1, "steps": len(losses), "train_hinge": float(np.mean(losses)),
                        "heldout_ranking_accuracy": acc})
        log(f"epoch {ep + 1}: train hinge {np.mean(losses):.4f}, held-out ranking accuracy {acc:.4f}")
        if acc > best:
            best = acc
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items() if not k.startswith("embed.")}
        if args.max_minutes and time.time() - t0 > args.max_minutes * 60:
            log("time budget reached")
            break
    manifest = {
        "what": "RUBER unreferenced scorer s_U (Tao et al. 2018): Bi-GRU(query), Bi-GRU(reply), [q; q^T M r; r] -> MLP -> sigmoid",
        "command": args.command_line,
        "data": f"chitchat-dataset (MIT) consecutive turn pairs; train conversations conv_id % 10 != 0 "
                f"({len(tr)} pairs sampled), held out conv_id % 10 == 0 ({len(ho)} pairs)",
        "objective": f"negative sampling, hinge loss max(0, {MARGIN} - s(q,r+) + s(q,r-)), one random reply per pair",
        "seed": args.seed,
        "heldout_ranking_accuracy": best,
        "heldout_ranking_accuracy_note": "fraction of held-out (query, true reply, random reply) triples where the true reply scores higher; chance = 0.5",
        "history": history,
        "train_seconds": round(time.time() - t0, 1),
        "config": {"hidden": args.hidden, "mlp_hidden": args.mlp_hidden, "max_wordpieces": MAX_WORDPIECES, "shared": True,
                   "embedding": "all-MiniLM-L6-v2 static word-piece input embeddings (frozen, not stored)",
                   "embedding_sha256_12": static_matrix_hash(), "lr": args.lr, "batch": args.batch, "epochs": args.epochs},
    }
    save(args.name or UNREF_CKPT, best_state, manifest, args.out_dir)
    load_bigru.cache_clear()
    return manifest


def _pool_sentence_vectors(pool, text_ids: np.ndarray) -> np.ndarray:
    """MiniLM sentence vectors of the given pool texts: from the pool's embedding index when it is on
    this machine (shipped or cached), else encoded now."""
    from core.models.encoders import encode
    from core.models.retrieval import cached_index_path, index_location
    cached = cached_index_path(pool)
    if cached.exists():
        log(f"using cached pool embeddings {cached}")
        return np.load(cached, mmap_mode="r")[text_ids].astype(np.float32)
    log(f"encoding {len(text_ids)} pool texts with MiniLM (no exact pool index cached"
        f"{'; the shipped PQ index is approximate' if index_location(pool) == 'shipped' else ''})")
    return encode([pool.texts[i] for i in text_ids], progress=log_progress())


def train_bert_head(args: argparse.Namespace) -> dict:
    import torch
    from core.models.checkpoints import save
    from core.models.retrieval import chitchat_pool
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    pool = chitchat_pool()
    tr_all, ho_all = split_pool(pool)
    # whole conversations, so consecutive pairs share their turns and each turn is embedded once
    all_tr_convs = np.unique(pool.conv_id[tr_all])
    n_convs = len(all_tr_convs) if args.bert_train_convs <= 0 else min(args.bert_train_convs, len(all_tr_convs))
    tr_convs = rng.choice(all_tr_convs, size=n_convs, replace=False)
    tr = tr_all[np.isin(pool.conv_id[tr_all], tr_convs)]
    ho_convs = rng.choice(np.unique(pool.conv_id[ho_all]), size=args.bert_heldout_convs, replace=False)
    ho = ho_all[np.isin(pool.conv_id[ho_all], ho_convs)]
    ho_rng = np.random.default_rng(args.seed + 1)
    ho_neg = pool.resp_idx[ho][ho_rng.permutation(len(ho))]  # replies of other held-out pairs
    tr_resp = pool.resp_idx[tr]  # negatives are drawn from the sampled training replies
    ids = np.unique(np.concatenate([pool.utt_idx[tr], tr_resp, pool.utt_idx[ho], pool.resp_idx[ho], ho_neg]))
    log(f"bert head: {len(tr)} training pairs, {len(ho)} held-out pairs, {len(ids)} texts to embed")
    t0 = time.time()
    vecs = _pool_sentence_vectors(pool, ids)
    pos_of = {int(t): i for i, t in enumerate(ids)}
    V = torch.from_numpy(np.ascontiguousarray(vecs))
    m = lambda a: torch.tensor([pos_of[int(x)] for x in a], dtype=torch.long)  # noqa: E731
    log(f"embedded in {time.time() - t0:.0f}s")
    model = build_vector_scorer(V.shape[1], args.bert_mlp_hidden)
    opt = torch.optim.Adam(model.parameters(), lr=args.bert_lr)
    hq, hp, hn = m(pool.utt_idx[ho]), m(pool.resp_idx[ho]), m(ho_neg)

    def evaluate() -> float:
        model.eval()
        with torch.no_grad():
            p, n = model(V[hq], V[hp]), model(V[hq], V[hn])
        model.train()
        return float((p > n).float().mean() + 0.5 * (p == n).float().mean())

    tq, tp = m(pool.utt_idx[tr]), m(tr_resp)
    best, best_state, history = -1.0, None, []
    for ep in range(args.bert_epochs):
        order = torch.from_numpy(rng.permutation(len(tr)))
        neg = tp[torch.from_numpy(rng.integers(0, len(tr), len(tr)))]
        losses = []
        for s in range(0, len(tr), args.batch):
            b = order[s:s + args.batch]
            sp, sn = model(V[tq[b]], V[tp[b]]), model(V[tq[b]], V[neg[b]])
            loss = torch.clamp(MARGIN - sp + sn, min=0).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
        acc = evaluate()
        history.append({"epoch": ep + 1, "train_hinge": float(np.mean(losses)), "heldout_ranking_accuracy": acc})
        log(f"bert head epoch {ep + 1}: train hinge {np.mean(losses):.4f}, held-out ranking accuracy {acc:.4f}")
        if acc > best:
            best, best_state = acc, {k: v.detach().clone() for k, v in model.state_dict().items()}
    from core.models.encoders import encoder_id
    manifest = {
        "what": "BERT-RUBER unreferenced head (Ghazarian et al. 2019 with MiniLM): frozen mean-pooled normalized "
                "all-MiniLM-L6-v2 vectors of query and reply, [q; q^T M r; r] -> MLP -> sigmoid",
        "command": args.command_line,
        "data": f"chitchat-dataset (MIT) consecutive turn pairs of {n_convs} training conversations "
                f"(conv_id % 10 != 0; {len(tr)} pairs) and {args.bert_heldout_convs} held-out conversations "
                f"(conv_id % 10 == 0; {len(ho)} pairs)",
        "objective": f"negative sampling, hinge loss max(0, {MARGIN} - s(q,r+) + s(q,r-)), one random reply per pair and epoch",
        "seed": args.seed,
        "heldout_ranking_accuracy": best,
        "heldout_ranking_accuracy_note": "fraction of held-out (query, true reply, random reply) triples where the true reply scores higher; chance = 0.5",
        "history": history,
        "train_seconds": round(time.time() - t0, 1),
        "config": {"dim": int(V.shape[1]), "mlp_hidden": args.bert_mlp_hidden, "encoder": encoder_id(),
                   "lr": args.bert_lr, "batch": args.batch, "epochs": args.bert_epochs},
    }
    save(args.name or BERT_UNREF_CKPT, best_state, manifest, args.out_dir)
    load_vector_scorer.cache_clear()
    return manifest


CALIBRATION_PAIRS = 1000
UBLEU_CAP = 30.0
"""υBLEU's range in the RUBER+υBLEU hybrid is the fixed [0, UBLEU_CAP], not the calibration rows' min and max:
on those rows the true reply is also the reference, so υBLEU's maximum is 100 and real replies (mostly below
20) were squeezed into the bottom of [0, 1]. The cap was chosen by leave-one-dataset-out over 7 rated sets
among 100, 50, 30, 20 and 10 (``benchmarks/ubleu_lodo.py``; docs/ubleu.md)."""
HYBRID_PARTS = {UNREF_CKPT: ("ruber_ref", "ruber_unref", "ubleu"),
                BERT_UNREF_CKPT: ("bert_ruber_ref", "bert_ruber_unref", "ubleu")}


def fit_normalization(n_pairs: int = CALIBRATION_PAIRS, seed: int = SEED, directory: str | None = None) -> dict:
    """The hybrids' fixed min-max constants (Tao et al. §3.3 normalizes over the evaluated set; fixed constants
    keep a score independent of what it is scored with): each part's (min, max) over ``2 * n_pairs`` rows of
    held-out chitchat conversations (``conv_id % 10 == 0``): ``n_pairs`` utterances, each answered by its true
    reply (which is also the reference) and by the true reply of another held-out pair. Written into the
    manifests of ``ruber-unref`` (for ``ruber`` and ``ruber_ubleu``) and ``ruber-bert-unref`` (for
    ``bert_ruber``); the weights are not touched. υBLEU's range is the fixed [0, ``UBLEU_CAP``]."""
    from core.data import Example
    from core.engine import score_examples
    from core.models.checkpoints import update_manifest
    from core.models.retrieval import chitchat_pool
    pool = chitchat_pool()
    _, held = split_pool(pool)
    rng = np.random.default_rng(seed)
    idx = rng.choice(held, size=n_pairs, replace=False)
    other = np.roll(idx, 1)  # each utterance gets the reply of the pair before it: another conversation's turn
    exs = []
    for k, (i, j) in enumerate(zip(idx, other)):
        u, r = pool.utterance(i), pool.response(i)
        exs.append(Example(f"cal{k}-true", "true", [u], r, [r]))
        exs.append(Example(f"cal{k}-other", "other", [u], pool.response(j), [r]))
    parts = sorted({p for ps in HYBRID_PARTS.values() for p in ps} - {"ubleu"})
    log(f"normalization: scoring {len(exs)} calibration rows with {', '.join(parts)}")
    table = score_examples(exs, parts, progress=log_progress())
    ranges = {}
    for p in parts:
        v = table.column(p)
        v = v[np.isfinite(v)]
        ranges[p] = [round(float(v.min()), 6), round(float(v.max()), 6)]
    ranges["ubleu"] = [0.0, UBLEU_CAP]
    for ckpt, ps in HYBRID_PARTS.items():
        update_manifest(ckpt, "normalization", {
            **{p: ranges[p] for p in ps},
            "fitted_on": f"{len(exs)} rows of held-out chitchat-dataset conversations (conv_id % 10 == 0): {n_pairs} "
                         "utterances, each answered by its true reply (also the reference) and by the reply of "
                         f"another held-out pair; seed {seed}",
            "rule": "each part's minimum and maximum over those rows, except ubleu: the fixed [0, 30] chosen by "
                    "leave-one-dataset-out (benchmarks/ubleu_lodo.py); scores outside are clipped to [0, 1]",
            "command": "dialeval train ruber --variant normalization"}, directory)
        log(f"normalization of {ckpt}: " + ", ".join(f"{p} [{ranges[p][0]:.4g}, {ranges[p][1]:.4g}]" for p in ps))
    return ranges


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--variant", choices=("bigru", "bert", "both", "normalization"), default="both",
                   help="which scorer to train (both: then also the hybrids' normalization constants); "
                        "normalization: only refit the constants")
    p.add_argument("--train-pairs", type=int, default=0, help="Bi-GRU: training pairs sampled (0 = all)")
    p.add_argument("--bert-train-convs", type=int, default=0, help="BERT head: training conversations sampled (0 = all)")
    p.add_argument("--bert-heldout-convs", type=int, default=150, help="BERT head: held-out conversations sampled")
    p.add_argument("--heldout-pairs", type=int, default=5000)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--bert-epochs", type=int, default=3)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--mlp-hidden", type=int, default=64)
    p.add_argument("--bert-mlp-hidden", type=int, default=256)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--lr", type=float, default=2e-3, help="Bi-GRU learning rate (Adam)")
    p.add_argument("--bert-lr", type=float, default=1e-3, help="BERT head learning rate (Adam)")
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--max-minutes", type=float, default=0.0,
                   help="Bi-GRU wall-clock budget (0 = none; a budget makes the result depend on machine speed)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--name", default=None, help="checkpoint name (default ruber-unref / ruber-bert-unref)")
    p.add_argument("--out-dir", default=None, help="checkpoint folder (default checkpoints/)")


@register_trainer("ruber", "RUBER unreferenced scorer (negative sampling, hinge loss) and BERT-RUBER's head",
                  _arguments)
def train(args: argparse.Namespace) -> int:
    set_threads(args.threads)
    out: dict = {}
    if args.variant in ("bigru", "both"):
        out["bigru"] = train_bigru(args)["heldout_ranking_accuracy"]
    if args.variant in ("bert", "both"):
        out["bert"] = train_bert_head(args)["heldout_ranking_accuracy"]
    if args.variant in ("both", "normalization"):
        out = {"heldout_ranking_accuracy": out} if out else {}
        out["normalization"] = fit_normalization(seed=args.seed, directory=args.out_dir)
    print(json.dumps(out))
    return 0
