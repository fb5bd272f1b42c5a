"""Speed benchmark: throughput of each metric against its floor, retrieval latency against rank-bm25,
peak memory, and how retrieval scales with the pool (10k, 100k, the full chitchat pool, 1M pairs).

Every measurement runs in its own child process (this script with ``--child``), so its peak memory
(``ru_maxrss``) is its own; "+RSS" is peak minus the child's resident size after imports. Torch and
faiss use ``--threads`` threads (default 1: the machine is shared; single-thread numbers are also the
most repeatable).

- **Metrics**: examples/second on ``--n`` examples built from chitchat pairs (context = an utterance,
  reference = its real reply, response = the reply of another random pair), after a warm-up call on 8
  other examples (model loading is reported separately as "load s"). Each metric is set against its
  *floor*, the raw work it cannot avoid: ``sacrebleu`` sentence BLEU-2 for bleu; one raw all-MiniLM-L6-v2
  encoding per example for MiniLM-based metrics; one raw SmolLM2-135M forward pass per response for the
  SmolLM-based MME specificity metrics and MME as a whole. ratio = metric ex/s / floor ex/s (1.0 = as
  fast as the floor; 0.1 = ten times its cost).
- **Retrieval**: single-query latency p50/p95 of ``core.models.retrieval`` (emb-u: encode the query + faiss
  search + leakage guard; bm25-u: bm25s) and of ``rank_bm25.BM25Okapi`` (same pool utterances, same
  queries, same tokenization: lowercase word tokens minus bm25s' English stop words), top 15.
- **Scaling**: for each pool size, build time, query latency and memory of the embedding index with the
  index type ``core.models.retrieval.Retriever`` picks (exact grid search up to 300k pairs, ``IndexHNSWFlat``
  M=32, efSearch=128 above), and of the bm25s index. Vectors are the real MiniLM pool embeddings when
  they are available (shipped index or cache) and the size fits in the pool, else random unit vectors
  (stated per row; random 384-d vectors are the hard case for HNSW). Texts above the pool size are
  sampled with replacement from the pool's utterances. For HNSW, recall@15 against exact search is
  measured on the same queries.

    .venv/bin/python benchmarks/speed.py                        # default run, writes the speed section
    .venv/bin/python benchmarks/speed.py --metrics bleu,ubleu --sizes 10k,100k --skip retrieval
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shlex
import sys
import time
from pathlib import Path

from common import ROOT, git_commit, load_registry_tolerantly, peak_mb, replace_section, sample_examples
from common import run_child as common_run_child
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
HNSW_THRESHOLD = 300_000  # core.models.retrieval.Retriever._init_embeddings: HNSW above this many pairs
FASTER_NOTE = {
    "ruber_ref": "static word-piece vectors, no transformer pass", "ruber_unref": "Bi-GRU over static vectors",
    "ruber": "static vectors + Bi-GRU", "mme_tcm": "keyword graph over static word-piece vectors, no transformer pass",
    "mme_sm_nll": "bfloat16 and the LM head only at response positions (the floor runs fp32 with the head "
                  "over every padded position)",
}
SMOLLM_METRICS = ("mme_sm_nll", "mme_sm_nce", "mme_sm_ppl", "mme", "mme_avg")


def floor_of(metric: str) -> str:
    if metric == "bleu":
        return "sacrebleu"
    if metric in SMOLLM_METRICS:
        return "smollm"
    return "minilm"


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def pctl(xs, q):
    import numpy as np
    return float(np.percentile(np.asarray(xs) * 1000, q))  # ms


# ------------------------------------------------------------------------------------------------
# child measurements


def child_floor(kind: str, n: int) -> dict:
    exs = sample_examples(n + 8)
    warm, exs = exs[:8], exs[8:]
    hyps = [e.response for e in exs]
    if kind == "sacrebleu":
        from sacrebleu.metrics import BLEU
        bleu = BLEU(max_ngram_order=2, effective_order=True)
        bleu.sentence_score(warm[0].response, [warm[0].reference])
        base = rss_mb()
        t = time.perf_counter()
        for e in exs:
            bleu.sentence_score(e.response, [e.reference])
        dt_ = time.perf_counter() - t
    elif kind == "minilm":
        from core.models.encoders import encode
        encode([e.response for e in warm])
        base = rss_mb()
        t = time.perf_counter()
        encode(hyps)
        dt_ = time.perf_counter() - t
    elif kind == "smollm":
        import torch
        from core.models.encoders import smollm
        tok, model = smollm()
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token

        def run(texts):
            with torch.no_grad():
                for s in range(0, len(texts), 16):
                    b = tok(texts[s:s + 16], return_tensors="pt", padding=True, truncation=True, max_length=128)
                    model(**b)
        run([e.response for e in warm])
        base = rss_mb()
        t = time.perf_counter()
        run(hyps)
        dt_ = time.perf_counter() - t
    else:
        raise ValueError(kind)
    return {"kind": kind, "n": n, "seconds": dt_, "ex_per_s": n / dt_, "base_mb": base, "peak_mb": peak_mb()}


def child_metric(name: str, n: int) -> dict:
    from core.engine import run_metric
    from core.scoring import get_metric
    exs = sample_examples(n + 8)
    t = time.perf_counter()
    metric = get_metric(name)
    run_metric(metric, exs[:8])
    load = time.perf_counter() - t
    base = rss_mb()
    t = time.perf_counter()
    res = run_metric(metric, exs[8:])
    dt_ = time.perf_counter() - t
    import numpy as np
    finite = int(np.isfinite(res.scores).sum())
    return {"metric": name, "n": n, "load_s": load, "seconds": dt_, "ex_per_s": n / dt_, "base_mb": base,
            "peak_mb": peak_mb(), "finite": finite, "signature": str(res.signature)}


_TOKEN_RE = re.compile(r"(?u)\b\w\w+\b")  # bm25s' default token pattern


def simple_tokens(text: str, stop: set[str]) -> list[str]:
    return [t for t in _TOKEN_RE.findall(text.lower()) if t not in stop]


def child_retrieval(method: str, n_queries: int) -> dict:
    import numpy as np
    from core.models.retrieval import chitchat_pool
    pool = chitchat_pool()
    rng = np.random.default_rng(7)
    qi = rng.choice(len(pool), size=n_queries + 3, replace=False)
    queries = [(pool.utterance(i), pool.response(i)) for i in qi]
    out: dict = {"method": method, "pool": len(pool), "queries": n_queries}
    if method == "rank-bm25":
        from bm25s.stopwords import STOPWORDS_EN
        from rank_bm25 import BM25Okapi
        stop = set(STOPWORDS_EN)
        base = rss_mb()
        t = time.perf_counter()
        corpus = [simple_tokens(pool.utterance(i), stop) for i in range(len(pool))]
        bm = BM25Okapi(corpus)
        out["build_s"] = time.perf_counter() - t
        lat = []
        for u, _ in queries[3:]:
            t = time.perf_counter()
            s = bm.get_scores(simple_tokens(u, stop))
            top = np.argpartition(-s, 15)[:15]
            top[np.argsort(-s[top])]
            lat.append(time.perf_counter() - t)
        out["index"] = "rank_bm25.BM25Okapi (pure Python)"
    else:
        from core.models.retrieval import Retriever, index_location
        if method.startswith("emb"):
            have = index_location(pool) is not None
            if not have:
                return {**out, "error": "pool embeddings not built (run scripts/build_pool_index.py); skipped"}
        base = rss_mb()
        t = time.perf_counter()
        r = Retriever(pool, method)
        out["build_s"] = time.perf_counter() - t
        out["index"] = (f"{'exact grid search' if r.index is None else type(r.index).__name__} ({r.index_source})"
                        if method.startswith("emb") else "bm25s (sparse matrix)")
        for u, ref in queries[:3]:  # warm-up (encoder load)
            r.retrieve([u], [ref], k=15)
        lat = []
        for u, ref in queries[3:]:
            t = time.perf_counter()
            r.retrieve([u], [ref], k=15)
            lat.append(time.perf_counter() - t)
    out.update({"p50_ms": pctl(lat, 50), "p95_ms": pctl(lat, 95), "qps": len(lat) / sum(lat),
                "base_mb": base, "peak_mb": peak_mb()})
    return out


def _unit(rng, n, d=384):
    import numpy as np
    out = np.empty((n, d), dtype=np.float32)
    for s in range(0, n, 100_000):  # chunks keep the float64 temporaries small
        k = min(100_000, n - s)
        x = rng.standard_normal((k, d), dtype=np.float32)
        out[s:s + k] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def child_scaling(kind: str, size: int, n_queries: int, force_hnsw: bool = False) -> dict:
    import numpy as np
    from core.models.retrieval import chitchat_pool
    pool = chitchat_pool()
    rng = np.random.default_rng(size)
    out: dict = {"kind": kind, "size": size, "queries": n_queries}
    if kind == "emb":
        import faiss
        vecs, source = None, "random unit vectors"
        if size <= len(pool):
            from core.models.retrieval import index_location
            if index_location(pool) is not None:
                from core.models.retrieval import pool_embeddings
                tv, src = pool_embeddings(pool)
                sel = np.sort(rng.choice(len(pool), size=size, replace=False))
                vecs = np.ascontiguousarray(tv[pool.utt_idx[sel]])
                source = f"MiniLM pool embeddings ({src})"
                del tv
        if vecs is None:
            vecs = _unit(rng, size)
        q = vecs[rng.choice(size, size=n_queries, replace=False)] + 0.05 * _unit(rng, n_queries)
        q = (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)
        base = rss_mb()
        t = time.perf_counter()
        hnsw = size > HNSW_THRESHOLD or force_hnsw
        if hnsw:
            index = faiss.IndexHNSWFlat(vecs.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efSearch = 128
            index.add(vecs)
            itype = "IndexHNSWFlat (M=32, efSearch=128)"
            search = index.search
        else:  # what core.models.retrieval.Retriever does up to 300k pairs
            import torch
            from core.models.retrieval import grid_search, on_grid
            grid = torch.from_numpy(on_grid(vecs))
            itype = "exact grid search (core.models.retrieval.grid_search)"
            search = lambda x, k: grid_search(grid, x, k)  # noqa: E731
        out["build_s"] = time.perf_counter() - t
        lat = []
        for j in range(n_queries):
            t = time.perf_counter()
            search(q[j:j + 1], 56)  # what Retriever asks for: 4k + 40 candidates
            lat.append(time.perf_counter() - t)
        t = time.perf_counter()
        search(q, 56)
        out["batched_ms_per_query"] = (time.perf_counter() - t) / n_queries * 1000
        out.update({"index": itype, "vectors": source, "p50_ms": pctl(lat, 50), "p95_ms": pctl(lat, 95),
                    "index_mb": vecs.nbytes / 2 ** 20 if not hnsw else
                    len(faiss.serialize_index(index)) / 2 ** 20, "base_mb": base, "peak_mb": peak_mb()})
        if hnsw:  # how much exactness HNSW gives up, and what exact search would cost
            flat = faiss.IndexFlatIP(vecs.shape[1])
            flat.add(vecs)
            _, approx = index.search(q, 15)
            t = time.perf_counter()
            _, exact = flat.search(q, 15)
            out["exact_ms_per_query"] = (time.perf_counter() - t) / n_queries * 1000
            out["recall_at_15"] = float(np.mean([len(set(a) & set(e)) / 15 for a, e in zip(approx, exact)]))
            out["recall_at_1"] = float(np.mean([e[0] in set(a) for a, e in zip(approx, exact)]))
            if force_hnsw and size <= HNSW_THRESHOLD:
                out["index"] += " (forced: core uses exact search at this size)"
    else:
        import bm25s
        utts = [pool.utterance(i) for i in range(len(pool))]
        if size <= len(utts):
            texts = [utts[i] for i in rng.choice(len(utts), size=size, replace=False)]
            source = "chitchat utterances"
        else:
            texts = [utts[i] for i in rng.integers(0, len(utts), size=size)]
            source = "chitchat utterances sampled with replacement"
        queries = [utts[i] for i in rng.choice(len(utts), size=n_queries, replace=False)]
        base = rss_mb()
        t = time.perf_counter()
        bm = bm25s.BM25()
        bm.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
        out["build_s"] = time.perf_counter() - t
        del texts
        lat = []
        for u in queries:  # as core.models.retrieval does: scores for every document, then top 56
            t = time.perf_counter()
            qt = bm25s.tokenize([u], stopwords="en", show_progress=False, return_ids=False)[0]
            if qt:
                s = bm.get_scores(qt)
                np.argpartition(-s, 56)[:56]
            lat.append(time.perf_counter() - t)
        out.update({"index": "bm25s", "vectors": source, "p50_ms": pctl(lat, 50), "p95_ms": pctl(lat, 95),
                    "base_mb": base, "peak_mb": peak_mb()})
        sc = getattr(bm, "scores", None)
        if isinstance(sc, dict):
            out["index_mb"] = sum(v.nbytes for v in sc.values() if hasattr(v, "nbytes")) / 2 ** 20
    return out


def run_child(spec: dict, threads: int, timeout: float) -> dict:
    """One measurement (``spec``) in a child process of this script (``common.run_child``)."""
    return common_run_child(__file__, spec, threads, timeout)


def child_main(spec: dict, threads: int) -> None:
    import torch
    torch.set_num_threads(threads)
    try:
        import faiss
        faiss.omp_set_num_threads(threads)
    except ImportError:
        pass
    what = spec["what"]
    try:
        if what == "floor":
            res = child_floor(spec["kind"], spec["n"])
        elif what == "metric":
            res = child_metric(spec["metric"], spec["n"])
        elif what == "retrieval":
            res = child_retrieval(spec["method"], spec["queries"])
        elif what == "scaling":
            res = child_scaling(spec["kind"], spec["size"], spec["queries"], spec.get("force_hnsw", False))
        else:
            raise ValueError(what)
    except Exception as e:  # noqa: BLE001 - reported in the table
        res = {**spec, "error": f"{type(e).__name__}: {str(e)[:250]}"}
    print("RESULT " + json.dumps(res), flush=True)


# ------------------------------------------------------------------------------------------------
# parent: run, tabulate, write


def parse_size(s: str, full: int) -> int:
    s = s.strip().lower()
    if s == "full":
        return full
    mult = {"k": 1_000, "m": 1_000_000}.get(s[-1], 1)
    return int(float(s[:-1] if s[-1] in "km" else s) * mult)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Speed benchmark (see the module docstring).")
    p.add_argument("--metrics", default="all", help="comma-separated metric names, or 'all' registered")
    p.add_argument("--n", type=int, default=200, help="examples per metric measurement")
    p.add_argument("--queries", type=int, default=100, help="queries for core retrieval latency")
    p.add_argument("--rank-bm25-queries", type=int, default=30, help="queries for rank-bm25 (slow)")
    p.add_argument("--sizes", default="10k,100k,full,1M", help="pool sizes for the scaling table")
    p.add_argument("--scaling-queries", type=int, default=100)
    p.add_argument("--force-hnsw", action="store_true", help="use HNSW at every size (to measure its recall on "
                                                              "real pool embeddings)")
    p.add_argument("--scaling-kinds", default="emb,bm25", help="which indexes to scale: emb, bm25 or both")
    p.add_argument("--skip", default="", help="comma list of parts to skip: metrics, retrieval, scaling")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--timeout", type=float, default=1800, help="seconds per child measurement")
    p.add_argument("--out", default=str(RESULTS), help="markdown file whose speed section is replaced")
    p.add_argument("--json", help="also write the raw results here")
    p.add_argument("--merge-scaling", action="append", help="add the scaling rows of an earlier run's --json file (e.g. a long "
                                            "1M run made separately) to the scaling table")
    p.add_argument("--from-json", help="re-render the report from an earlier --json file (no measuring)")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child_main(json.loads(args.child), args.threads)
        return 0

    from core.report import to_json
    if args.from_json:
        results = json.loads(Path(args.from_json).read_text())
    else:
        results = measure(args, argv)
        if args.json:
            Path(args.json).write_text(to_json(results) + "\n", encoding="utf-8")
    prevs = [json.loads(Path(f).read_text()) for f in (args.merge_scaling or [])]
    report = render_report(results, prevs)
    replace_section(Path(args.out), "speed", report)
    print(report)
    return 0


def measure(args, argv) -> dict:
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    started = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M")
    load_start = os.getloadavg()[0]
    t0 = time.time()
    log = lambda s: print(f"[{time.time() - t0:7.1f}s] {s}", file=sys.stderr, flush=True)  # noqa: E731
    results: dict = {"floors": {}, "metrics": [], "retrieval": [], "scaling": [], "parts": [],
                     "n": args.n, "threads": args.threads, "scaling_queries": args.scaling_queries}
    if "metrics" not in skip:
        results["parts"].append("metrics")
        load_registry_tolerantly()
        from core.scoring import available_metrics
        known = list(available_metrics())
        metrics = known if args.metrics == "all" else [m.strip() for m in args.metrics.split(",") if m.strip()]
        for kind in sorted({floor_of(m) for m in metrics}):
            log(f"floor {kind} ...")
            results["floors"][kind] = run_child({"what": "floor", "kind": kind, "n": args.n}, args.threads, args.timeout)
            log(f"  {results['floors'][kind]}")
        for m in metrics:
            log(f"metric {m} ...")
            r = run_child({"what": "metric", "metric": m, "n": args.n}, args.threads, args.timeout)
            log(f"  {r}")
            results["metrics"].append(r)
    if "retrieval" not in skip:
        results["parts"].append("retrieval")
        for method, nq in (("emb-u", args.queries), ("bm25-u", args.queries), ("rank-bm25", args.rank_bm25_queries)):
            log(f"retrieval {method} ...")
            r = run_child({"what": "retrieval", "method": method, "queries": nq}, args.threads, args.timeout)
            log(f"  {r}")
            results["retrieval"].append(r)
    if "scaling" not in skip:
        results["parts"].append("scaling")
        from core.models.retrieval import chitchat_pool
        full = len(chitchat_pool())
        results["full_pool"] = full
        for label in args.sizes.split(","):
            size = parse_size(label, full)
            for kind in [k.strip() for k in args.scaling_kinds.split(",") if k.strip()]:
                log(f"scaling {kind} {size} ...")
                r = run_child({"what": "scaling", "kind": kind, "size": size, "queries": args.scaling_queries,
                               "force_hnsw": args.force_hnsw}, args.threads, args.timeout)
                log(f"  {r}")
                results["scaling"].append(r)
    argv_ = argv if argv is not None else sys.argv[1:]
    results.update({"command": "python benchmarks/speed.py" + (" " + shlex.join(argv_) if argv_ else ""),
                    "started": started, "minutes": (time.time() - t0) / 60, "commit": git_commit(),
                    "cpus": os.cpu_count(), "python": platform.python_version(),
                    "load": [load_start, os.getloadavg()[0]]})
    return results


def _scaling_row(r: dict, threads, full: int | None, mark: str = "") -> dict:
    from core.formatting import fmt_num
    size = f"{r['size']:,}" + (" (full)" if r["size"] == full else "") + mark
    if r.get("error"):
        return {"size": size, "idx": r.get("kind", ""), "thr": str(threads), "note": r["error"]}
    note = r["vectors"]
    if "batched_ms_per_query" in r:
        note += f"; {r['batched_ms_per_query']:.2f} ms per query when the {r['queries']} queries come in one batch"
    if "recall_at_15" in r:
        note += f"; recall@15 vs exact search {r['recall_at_15']:.3f}"
        if "recall_at_1" in r:
            note += f", recall of the exact top-1 {r['recall_at_1']:.2f}"
        note += f"; exact search would take {r['exact_ms_per_query']:.1f} ms/query"
    return {"size": size, "idx": r["index"], "thr": str(threads), "build": fmt_num(r["build_s"], 1),
            "p50": fmt_num(r["p50_ms"], 2), "p95": fmt_num(r["p95_ms"], 2),
            "mem": f"{r['index_mb']:.0f}" if "index_mb" in r else "-", "peak": f"{r['peak_mb']:.0f}", "note": note}


def load_note(load) -> str:
    """The one-minute load average at the start and end of the run, as the report states it."""
    if not load:
        return "load average not recorded"
    return f"one-minute load average {load[0]:.2f} at the start and {load[1]:.2f} at the end"


def render_report(results: dict, prevs: list[dict] | None = None) -> str:
    from core.formatting import fmt_num
    from core.report import render
    f1 = lambda x: fmt_num(x, 1)  # noqa: E731
    L = ["## Speed and memory", "",
         f"Made by `{results['command']}` on {results['started']} UTC (commit {results.get('commit')}, "
         f"{results.get('cpus')} CPU cores, Python {results.get('python')}), in {results.get('minutes', 0):.1f} min, "
         f"{load_note(results.get('load'))}. Numbers move with machine load: read ratios and orders of magnitude, "
         "not the third digit.", ""]
    parts = results.get("parts", [])
    if "metrics" in parts:
        rows = []
        for r in results["metrics"]:
            fl = results["floors"].get(floor_of(r["metric"]), {})
            if r.get("error"):
                rows.append({"metric": r["metric"], "floor": floor_of(r["metric"]), "note": "failed: " + r["error"][:160]})
                continue
            ratio = r["ex_per_s"] / fl["ex_per_s"] if fl.get("ex_per_s") else float("nan")
            rows.append({"metric": r["metric"], "eps": f1(r["ex_per_s"]), "load": f1(r["load_s"]),
                         "floor": floor_of(r["metric"]), "feps": f1(fl.get("ex_per_s")), "ratio": fmt_num(ratio, 3),
                         "peak": f"{r['peak_mb']:.0f}", "delta": f"{r['peak_mb'] - r['base_mb']:+.0f}",
                         "note": "; ".join(x for x in (
                             "" if r["finite"] == r["n"] else f"{r['n'] - r['finite']} NaN scores",
                             "faster than the floor: " + FASTER_NOTE.get(r["metric"], "not explained")
                             if ratio > 1.5 else "") if x)})
        floors = [{"metric": f"floor: {k}", "eps": f1(v.get("ex_per_s")), "peak": f"{v.get('peak_mb', 0):.0f}",
                   "delta": f"{v['peak_mb'] - v['base_mb']:+.0f}" if "peak_mb" in v else "",
                   "note": v.get("error", "")} for k, v in results["floors"].items()]
        L += [f"### Metric throughput ({results['n']} examples, {results['threads']} thread(s))", "",
              "Examples: chitchat utterance + its real reply as reference + another pair's reply as response. "
              "ratio = metric ex/s ÷ floor ex/s (1 = as fast as the raw model work it cannot avoid; sacrebleu is "
              "the floor for bleu). load s = constructing the metric and a warm-up call on 8 examples. "
              "Peak = peak RSS of the measuring process (MB); +RSS = peak minus its size after imports.", "",
              render(rows + floors, [("metric", "metric"), ("eps", "ex/s"), ("load", "load s"), ("floor", "floor"),
                                     ("feps", "floor ex/s"), ("ratio", "ratio"), ("peak", "peak MB"),
                                     ("delta", "+RSS MB"), ("note", "note")], "markdown"), ""]
    if "retrieval" in parts:
        rows = []
        for r in results["retrieval"]:
            if r.get("error"):
                rows.append({"m": r["method"], "note": r["error"]})
                continue
            rows.append({"m": ("core.models.retrieval " + r["method"]) if r["method"] != "rank-bm25" else "rank-bm25 (reference)",
                         "idx": r["index"], "q": str(r["queries"]), "build": f1(r["build_s"]),
                         "p50": f1(r["p50_ms"]), "p95": f1(r["p95_ms"]), "peak": f"{r['peak_mb']:.0f}",
                         "delta": f"{r['peak_mb'] - r['base_mb']:+.0f}", "note": ""})
        pool_n = next((r["pool"] for r in results["retrieval"] if "pool" in r), "?")
        L += [f"### Retrieval latency, one query at a time, top 15 (chitchat pool, {pool_n:,} pairs)", "",
              "Same pool, same random queries (pool utterances). emb-u includes encoding the query with MiniLM and "
              "the leakage guard; the bm25 rows include tokenizing the query. build s = loading/building the index.", "",
              render(rows, [("m", "retriever"), ("idx", "index"), ("q", "queries"), ("build", "build s"),
                            ("p50", "p50 ms"), ("p95", "p95 ms"), ("peak", "peak MB"), ("delta", "+RSS MB"),
                            ("note", "note")], "markdown"), ""]
    prevs = prevs or []
    if "scaling" in parts or prevs:
        full = results.get("full_pool")
        rows = [_scaling_row(r, results["threads"], full) for r in results.get("scaling", [])]
        note = ""
        for k, prev in enumerate(prevs):
            mark = " " + "†‡§¶"[k % 4]
            rows += [_scaling_row(r, prev.get("threads", "?"), full, mark) for r in prev.get("scaling", [])]
            note += f" Rows marked{mark} come from a separate run, `{prev.get('command')}` ({prev.get('started')} UTC)."
        L += [f"### Scaling with the pool size ({results.get('scaling_queries', '?')} queries)", "",
              "Index type as core.models.retrieval chooses it (exact grid search up to 300k pairs, HNSW above). Query time "
              "is the index search alone for the 56 candidates Retriever asks for (no query encoding). index MB = the "
              "faiss index's size (vectors for a flat index; serialized graph + vectors for HNSW); peak MB = peak RSS of "
              "the measuring process (it also holds the pool and, for real vectors, the decoded pool embeddings)."
              + note, "",
              render(rows, [("size", "pairs"), ("idx", "index"), ("thr", "threads"), ("build", "build s"),
                            ("p50", "p50 ms"), ("p95", "p95 ms"), ("mem", "index MB"), ("peak", "peak MB"),
                            ("note", "vectors / notes")], "markdown"), ""]
    return "\n".join(L)


if __name__ == "__main__":
    sys.exit(main())
