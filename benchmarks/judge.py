"""Quality of the shipped A/B judge on held-out human preferences, against simple baselines, and the
learning curve of "train on your own votes". Prints markdown tables (pasted into docs/judge.md).

    .venv/bin/python benchmarks/judge.py                       # everything (~20-30 min on 2 busy cores)
    .venv/bin/python benchmarks/judge.py --skip-curve          # held-out table only
    .venv/bin/python benchmarks/judge.py --skip-heldout --curve-set dailydialog-zhao
    .venv/bin/python benchmarks/judge.py --skip-curve --cap-test 300      # 1,928 test pairs instead of 610
    .venv/bin/python benchmarks/judge.py --skip-heldout --base-curve --folds 5   # + votes-only curve (paper)
    .venv/bin/python benchmarks/judge.py --skip-heldout --skip-curve --stack-mme # judge + MME-CRS stack
    .venv/bin/python benchmarks/judge.py --skip-heldout --skip-curve --rejudge 100  # same pairs judged twice

Test pairs are exactly those of ``python -m core train judge`` (same seed, caps and context split):
test-split contexts of the training sets and all of the DailyDialog-derived sets (never trained on).
A baseline "X wins" prefers the reply with the higher X (equal scores count half); pairs where X is
undefined (BLEU without references) are left out of that baseline's cell.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from common import markdown_table
from core.judges.pairs import context_key, votes_from_examples
from core.judges.pairwise import Encoded, N_LAYERS, PairwiseJudge, combine_orders, encode_pairs, load_judge, verdicts
from core.judges.votes import VoteFeatures, context_folds, learning_curve, vote_features
from core.progress import progress_bar
from core.settings import SEED, shared_data_dir
from core.training.judge import train_judge
from core.training.judge_pairs import TRAIN_SETS, evaluate, heldout_cache_path, load_heldout_predictions, train_test_pairs
from core.verdict import preference_dimension, side_accuracy




def metric_baseline(name: str, pairs, progress=None) -> np.ndarray:
    """P(A) = 0.5 + 0.5 sign(metric(A) - metric(B)) per pair; NaN where the metric is undefined."""
    from core.engine import score_examples
    exs = {}
    for p in pairs:
        for e in (p.example_a, p.example_b):
            exs.setdefault(e.id, e)
    ids = list(exs)
    res = score_examples([exs[i] for i in ids], [name], progress=progress).results[name]
    score = dict(zip(ids, res.scores))
    out = np.full(len(pairs), np.nan)
    for k, p in enumerate(pairs):
        a, b = score[p.example_a.id], score[p.example_b.id]
        if not (np.isnan(a) or np.isnan(b)):
            out[k] = 0.5 + 0.5 * np.sign(a - b)
    return out


def mme_pair_scores(pairs, progress=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MME-CRS of reply A and reply B of every pair, and the sd of the scores of the pair's data set.
    Per data set, with the CRS weights of that set's preference dimension fitted **without** that set
    (leave-one-dataset-out, as in the quality table)."""
    from core.engine import run_metric
    from core.scoring import get_metric
    sa, sb, sd = (np.full(len(pairs), np.nan) for _ in range(3))
    by_set: dict[str, list[int]] = {}
    for k, p in enumerate(pairs):
        by_set.setdefault(p.dataset, []).append(k)
    for ds, ks in by_set.items():
        dim = preference_dimension([pairs[k].example_a for k in ks]) or "overall"
        metric = get_metric("mme").for_dimension(dim)
        metric = metric.held_out_for(ds) or metric
        exs = {}
        for k in ks:
            for e in (pairs[k].example_a, pairs[k].example_b):
                exs.setdefault(e.id, e)
        ids = list(exs)
        score = dict(zip(ids, run_metric(metric, [exs[i] for i in ids], progress).scores))
        spread = float(np.std(list(score.values()))) or 1.0
        for k in ks:
            sa[k], sb[k], sd[k] = score[pairs[k].example_a.id], score[pairs[k].example_b.id], spread
    return sa, sb, sd


def mme_baseline(pairs, progress=None) -> np.ndarray:
    """P(A) from MME-CRS (higher wins; leave-one-dataset-out weights, see :func:`mme_pair_scores`)."""
    sa, sb, _ = mme_pair_scores(pairs, progress)
    return 0.5 + 0.5 * np.sign(sa - sb)


def _not_ready(name: str) -> str | None:
    """Why a baseline would need hours of building first (υBLEU without a pool index or rater), else None."""
    if name != "ubleu":
        return None
    from core.models.checkpoints import paths
    from core.models.retrieval import chitchat_pool, index_location
    if not paths("nn-rater")[0].exists():
        return "the NN-rater checkpoint is not trained yet"
    if index_location(chitchat_pool()) is None:
        return "the chitchat pool index is neither shipped nor cached (building it takes hours here)"
    return None


def heldout(args) -> dict:
    import pandas as pd
    judge = load_judge(args.checkpoint)
    _, test = train_test_pairs(SEED, args.cap_train, args.cap_test)
    t0 = time.time()
    cached = load_heldout_predictions(test, heldout_cache_path(PairwiseJudge.cache_identity(args.checkpoint)),
                                      judge.tie_margin)
    if cached is not None:
        print("using the training run's held-out predictions for this checkpoint", file=sys.stderr)
    table, out = evaluate(judge, test, progress=progress_bar(prefix="test "), out=cached)
    secs = time.time() - t0
    gold = np.array([p.vote for p in test])
    ds = np.array([p.dataset for p in test])
    extra = {}
    for name in [m for m in args.baselines.split(",") if m]:
        why = _not_ready(name)
        if why:
            print(f"baseline {name} skipped: {why}", file=sys.stderr)
            continue
        try:
            extra[name] = (mme_baseline(test, progress_bar(prefix="mme ")) if name == "mme"
                           else metric_baseline(name, test, progress_bar(prefix=f"{name} ")))
        except Exception as e:  # a baseline metric that is not built/trained yet is reported, not fatal
            print(f"baseline {name} unavailable: {type(e).__name__}: {e}", file=sys.stderr)
    for name, p in extra.items():
        vals = []
        for d in list(table["dataset"]):
            m = (ds == d) if d != "overall" else np.ones(len(test), bool)
            m &= ~np.isnan(p)
            vals.append(side_accuracy(p[m], gold[m]) if m.any() else float("nan"))
        table[f"{name}"] = vals
    # judge on the pairs where each partial-coverage baseline is defined (same pairs)
    same = {}
    for name, p in extra.items():
        m = ~np.isnan(p)
        if m.any() and not m.all():
            same[name] = {"pairs": int(m.sum()), "judge": side_accuracy(out.p_a[m], gold[m]),
                          "length": side_accuracy(
                              0.5 + 0.5 * np.sign([len(test[i].response_a.split()) - len(test[i].response_b.split())
                                                   for i in np.where(m)[0]]), gold[m]),
                          name: side_accuracy(p[m], gold[m])}
    trained = np.isin(ds, TRAIN_SETS)
    groups = {"held-out contexts of training sets": trained, "unseen DailyDialog sets": ~trained}
    grows = []
    for g, m in groups.items():
        grows.append({"group": g, "pairs": int(m.sum()), "judge": side_accuracy(out.p_a[m], gold[m]),
                      "order disagreement": float(np.mean((out.p_ab[m] > .5) != (out.p_ba_flipped[m] > .5)))})
    ties = []
    for tm in (0.0, 0.05, 0.1, 0.2, 0.3):
        v = np.array(verdicts(out.p_a, tm))
        g = np.array(gold)
        decided = v != "tie"
        ties.append({"tie margin": tm, "judge says tie": float(np.mean(~decided)),
                     "accuracy on decided pairs": float(np.mean(v[decided] == g[decided])) if decided.any() else float("nan"),
                     "agreement (tie = half)": float(np.mean(np.where(decided, v == g, 0.5)))})
    print("\n## Held-out agreement with human preferences (forced choice from combined p)\n")
    print(markdown_table(table))
    print("\n## By group\n")
    print(markdown_table(pd.DataFrame(grows)))
    if same:
        print("\n## Judge vs partial-coverage baselines on the same pairs\n")
        for name, row in same.items():
            print(markdown_table(pd.DataFrame([row])))
    print("\n## Tie margin trade-off (all test pairs)\n")
    print(markdown_table(pd.DataFrame(ties)))
    if cached is None:
        print(f"\njudge inference: {len(test)} pairs x 2 orders in {secs:.0f} s "
              f"({2 * len(test) / secs:.1f} sequences/s)")
    print(f"\nsignature {judge.signature()}")
    return {"table": table.to_dict("records"), "groups": grows, "same_pairs": same, "ties": ties}


def curve(args) -> dict:
    from core.data import load_jsonl
    judge = load_judge(args.checkpoint)
    ex = load_jsonl((lambda: shared_data_dir() / "eval")() / f"{args.curve_set}.jsonl")
    votes = votes_from_examples(ex)
    rng = np.random.default_rng(SEED)
    votes = [votes[i] for i in rng.permutation(len(votes))[:args.curve_votes]]
    t0 = time.time()
    import hashlib
    from core.models.retrieval import cache_dir
    ident = hashlib.sha256(PairwiseJudge.cache_identity(args.checkpoint).encode()).hexdigest()[:12]
    cache = cache_dir() / f"judge-votes-{ident}-{args.curve_set}-{len(votes)}.npz"
    if cache.exists():
        feats = VoteFeatures.load(cache)
    else:
        feats = vote_features(votes, judge, progress_bar(prefix="votes "))
        cache.parent.mkdir(parents=True, exist_ok=True)
        feats.save(cache)
    t1 = time.time()
    sizes = list(range(100, 1000, 100))
    df = learning_curve(votes, sizes, args.folds, judge, features=feats, progress=progress_bar())
    t2 = time.time()
    # the votes alone on the same units (no offset from the shipped judge): what the votes themselves teach
    alone = learning_curve(votes, sizes, args.folds, judge, features=feats, from_scratch=True)
    df["votes_alone"] = [float("nan")] + list(alone["agreement"][1:])
    print(f"\n## Learning curve on {args.curve_set} ({len(votes)} clear-margin votes, {args.folds}-fold CV by "
          f"context; n_train = 0 is the shipped judge; votes_alone = the same re-fit without the shipped "
          f"judge's logit as offset)\n")
    print(markdown_table(df))
    print(f"\nfeatures: {t1 - t0:.0f} s for {len(votes)} votes x 2 orders; all fits: {t2 - t1:.0f} s")
    return {"curve": df.to_dict("records"), "curve_set": args.curve_set, "votes": len(votes)}


def base_curve(args) -> dict:
    """The paper's setting for comparison: no shipped judge, votes only. For the same folds and draws as
    :func:`learning_curve`, the top MiniLM layer + a fresh head are trained from the *base* model on the
    n training votes (both orders, 3 epochs, the shipped judge's learning rates), then the fold is predicted."""
    import pandas as pd

    from core.data import load_jsonl
    ex = load_jsonl((lambda: shared_data_dir() / "eval")() / f"{args.curve_set}.jsonl")
    votes = votes_from_examples(ex)
    rng = np.random.default_rng(SEED)
    votes = [votes[i] for i in rng.permutation(len(votes))[:args.curve_votes]]
    t0 = time.time()
    enc = encode_pairs([v.context for v in votes], [v.response_a for v in votes],
                         [v.response_b for v in votes], progress_bar(prefix="votes (base) "), n_frozen=N_LAYERS - 1)
    labels = np.array([v.label for v in votes], dtype=np.float32)
    gold = [v.vote for v in votes]
    folds = context_folds(votes, args.folds, SEED)

    def sub(idx):
        rows = np.stack([2 * idx, 2 * idx + 1], axis=1).reshape(-1)
        return Encoded([enc.states[r] for r in rows], [enc.spans[r] for r in rows])

    sizes = [int(s) for s in args.base_sizes.split(",")]
    rows, done = [], 0
    for n in sizes:
        accs, used = [], []
        for f in range(args.folds):
            test = np.where(folds == f)[0]
            train = np.where(folds != f)[0]
            pick = np.random.default_rng(SEED + 1000 * f + n).permutation(train)[:n]
            used.append(len(pick))
            judge = train_judge(sub(pick), labels[pick], epochs=3, n_frozen=N_LAYERS - 1)
            accs.append(side_accuracy(judge.predict_encoded(sub(test)).p_a, [gold[i] for i in test]))
            done += 1
            print(f"\rbase curve: {done}/{len(sizes) * args.folds} fits", end="", file=sys.stderr)
        rows.append({"n_train": round(float(np.mean(used))), "agreement": float(np.mean(accs)), "low": float(np.min(accs)),
                     "high": float(np.max(accs)), "sd": float(np.std(accs)), "folds": args.folds})
    df = pd.DataFrame(rows)
    print(f"\n\n## Votes only, from the base MiniLM (the paper's setting) on {args.curve_set}, same folds; "
          f"{time.time() - t0:.0f} s\n")
    print(markdown_table(df))
    return {"base_curve": df.to_dict("records")}


def rejudge(args) -> dict:
    """Seconds to judge the same pairs twice in one process (the dashboard's judge run, then its votes re-fit
    on those pairs): the second time SmolLM2 reads nothing (the reader remembers what it read)."""
    _, test = train_test_pairs(SEED, args.cap_train, args.cap_test)
    pairs = [p for p in test if p.dataset == "usr-topical"][:args.rejudge]
    judge = load_judge(args.checkpoint)
    judge.predict([["warm-up"]], ["hi ."], ["hello ."])  # loads MiniLM and SmolLM2 outside the timing
    ins = ([p.context for p in pairs], [p.response_a for p in pairs], [p.response_b for p in pairs])
    secs = []
    for _ in range(2):
        t = time.time()
        out = judge.predict(*ins)
        secs.append(time.time() - t)
    print(f"\n## Judging the same {len(pairs)} usr-topical test pairs twice in one process\n")
    print("| run | seconds | pairs/s |\n|---|---|---|")
    for k, sec in enumerate(secs):
        print(f"| {k + 1} | {sec:.1f} | {len(pairs) / sec:.1f} |")
    return {"rejudge_seconds": secs, "pairs": len(pairs), "p_a_mean": float(np.mean(out.p_a))}


def stack_mme(args) -> dict:
    """Would MME-CRS add to the judge? A 2-weight logistic stack ``logit(p) = a * logit(p_judge) + b * z``
    (``z`` = MME(A) - MME(B) over the set's sd of MME scores, LODO weights) fitted on test-split pairs
    whose contexts are **not** among the evaluation pairs (the judge memorized its training pairs, so
    those cannot be used), then scored on the usual evaluation pairs."""
    from collections import defaultdict

    import pandas as pd
    import torch

    judge = load_judge(args.checkpoint)
    _, evalp = train_test_pairs(SEED, args.cap_train, args.cap_test)
    _, allp = train_test_pairs(SEED, args.cap_train, 10 ** 9)
    eval_ctx = {context_key(p.context) for p in evalp}
    per_set = defaultdict(list)
    for p in allp:
        if context_key(p.context) not in eval_ctx and len(per_set[p.dataset]) < args.stack_per_set:
            per_set[p.dataset].append(p)
    fitp = [p for v in per_set.values() for p in v]

    def mme_z(pairs):
        sa, sb, sd = mme_pair_scores(pairs, progress_bar(prefix="mme "))
        return (sa - sb) / sd

    def judge_logit(pairs):
        out = judge.predict([p.context for p in pairs], [p.response_a for p in pairs],
                            [p.response_b for p in pairs], progress_bar(prefix="judge "))
        q = np.clip(out.p_a, 1e-6, 1 - 1e-6)
        return np.log(q / (1 - q))

    xf = np.stack([judge_logit(fitp), mme_z(fitp)], 1)
    yf = np.array([p.label for p in fitp])
    xe = np.stack([judge_logit(evalp), mme_z(evalp)], 1)
    torch.manual_seed(SEED)
    w = torch.zeros(2, requires_grad=True)
    opt = torch.optim.LBFGS([w], max_iter=200)
    xt, yt = torch.tensor(xf, dtype=torch.float32), torch.tensor(yf, dtype=torch.float32)

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(xt @ w, yt)
        loss.backward()
        return loss
    opt.step(closure)
    wa, wb = (float(v) for v in w.detach())
    p_stack = 1 / (1 + np.exp(-(xe @ np.array([wa, wb]))))
    gold = np.array([p.vote for p in evalp])
    ds = np.array([p.dataset for p in evalp])
    rows = []
    for d in list(dict.fromkeys(ds)) + ["overall"]:
        m = (ds == d) if d != "overall" else np.ones(len(evalp), bool)
        rows.append({"dataset": d, "pairs": int(m.sum()),
                     "judge": side_accuracy(1 / (1 + np.exp(-xe[m, 0])), gold[m]),
                     "MME-CRS": side_accuracy(0.5 + 0.5 * np.sign(xe[m, 1]), gold[m]),
                     "judge + MME (stack)": side_accuracy(p_stack[m], gold[m])})
    df = pd.DataFrame(rows)
    print(f"\n## Judge + MME-CRS stack (weights fitted on {len(fitp)} other test-split pairs: "
          f"a = {wa:.3f} on the judge's logit, b = {wb:.3f} on z(MME))\n")
    print(markdown_table(df))
    return {"stack": df.to_dict("records"), "stack_weights": [wa, wb], "stack_fit_pairs": len(fitp)}


def siamese(args) -> dict:
    """The siamese alternative, measured on the same split: frozen MiniLM sentence embeddings of the
    context (last two turns), reply A and reply B -> MLP on [c, a, b, a-b, c*a-c*b], trained on both
    orders of the same training pairs as the shipped judge (seed 13, 40 full-batch epochs)."""
    import pandas as pd
    import torch

    from core.models.encoders import encode
    train, test = train_test_pairs(SEED, args.cap_train, args.cap_test)
    texts = sorted({t for p in train + test for t in (" ".join(p.context[-2:]), p.response_a, p.response_b)})
    t0 = time.time()
    emb = dict(zip(texts, encode(texts, progress=progress_bar(prefix="siamese "))))
    secs = time.time() - t0

    def feats(pairs, flip=False):
        rows = []
        for p in pairs:
            c, a, b = emb[" ".join(p.context[-2:])], emb[p.response_a], emb[p.response_b]
            if flip:
                a, b = b, a
            rows.append(np.concatenate([c, a, b, a - b, c * a - c * b]))
        return torch.tensor(np.array(rows), dtype=torch.float32)

    torch.manual_seed(SEED)
    x = torch.cat([feats(train), feats(train, True)])
    y = torch.tensor([p.label for p in train] + [1 - p.label for p in train], dtype=torch.float32)
    net = torch.nn.Sequential(torch.nn.Dropout(0.1), torch.nn.Linear(x.shape[1], 256), torch.nn.Tanh(),
                              torch.nn.Linear(256, 1))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, weight_decay=1e-4)
    for _ in range(40):
        loss = torch.nn.functional.binary_cross_entropy_with_logits(net(x).squeeze(-1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    net.eval()
    with torch.no_grad():
        p_ab = torch.sigmoid(net(feats(test)).squeeze(-1)).double().numpy()
        p_ba = torch.sigmoid(net(feats(test, True)).squeeze(-1)).double().numpy()
    p_a, flipped, _ = combine_orders(p_ab, p_ba)
    gold = np.array([p.vote for p in test])
    ds = np.array([p.dataset for p in test])
    rows = []
    for d in list(dict.fromkeys(ds)) + ["overall"]:
        m = (ds == d) if d != "overall" else np.ones(len(test), bool)
        rows.append({"dataset": d, "pairs": int(m.sum()), "siamese": side_accuracy(p_a[m], gold[m]),
                     "order disagreement": float(np.mean((p_ab[m] > .5) != (flipped[m] > .5)))})
    df = pd.DataFrame(rows)
    print(f"\n## Siamese variant (frozen sentence embeddings + MLP), same pairs; {len(texts)} texts encoded in {secs:.0f} s\n")
    print(markdown_table(df))
    return {"siamese": df.to_dict("records")}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", default="judge")
    ap.add_argument("--cap-train", type=int, default=8000)
    ap.add_argument("--cap-test", type=int, default=70)
    ap.add_argument("--baselines", default="bleu,ubleu,mme")
    ap.add_argument("--curve-set", default="dailydialog-zhao")
    ap.add_argument("--curve-votes", type=int, default=1150)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--skip-curve", action="store_true")
    ap.add_argument("--skip-heldout", action="store_true")
    ap.add_argument("--siamese", action="store_true", help="also measure the siamese variant")
    ap.add_argument("--base-curve", action="store_true",
                    help="also the votes-only curve from the base MiniLM (the paper's setting; ~10 min)")
    ap.add_argument("--base-sizes", default="100,300,500,700,900")
    ap.add_argument("--stack-mme", action="store_true",
                    help="also measure a judge + MME-CRS stack fitted on other test-split pairs")
    ap.add_argument("--stack-per-set", type=int, default=150)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rejudge", type=int, default=0, help="time judging this many test pairs twice")
    ap.add_argument("--json", help="also write the numbers as JSON here")
    args = ap.parse_args()
    import torch
    torch.set_num_threads(args.threads)
    res = {}
    if not args.skip_heldout:
        res.update(heldout(args))
    if not args.skip_curve:
        res.update(curve(args))
    if args.base_curve:
        res.update(base_curve(args))
    if args.stack_mme:
        res.update(stack_mme(args))
    if args.rejudge:
        res.update(rejudge(args))
    if args.siamese:
        res.update(siamese(args))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
