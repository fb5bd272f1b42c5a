"""Quality benchmark: the full meta-evaluation of every registered metric over ../shared/data/eval.

For each metric x dataset x human dimension: Spearman, Pearson, Kendall with bootstrap intervals
(contexts resampled where they repeat) and n, via ``core.meta_eval.meta_evaluate``; learned metrics that
define ``held_out_for`` are evaluated leave-one-dataset-out. A metric that fails (missing checkpoint,
a bug) is reported in the output, never fatal. The result replaces the quality section of
``benchmarks/RESULTS.md`` (between ``<!-- quality:start -->`` and ``<!-- quality:end -->``), headed by
the exact command and date that made it.

    .venv/bin/python benchmarks/quality.py                       # everything (slow with learned metrics)
    .venv/bin/python benchmarks/quality.py --metrics bleu,ubleu --datasets usr-topical,dailydialog-zhao
    .venv/bin/python benchmarks/quality.py --max-rows 1000         # cap the big sets (dstc7, humod)
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import shlex
import sys
import time
from pathlib import Path

from common import ROOT, SHARED_EVAL, git_commit, load_registry_tolerantly, replace_section

DEFAULT_DATA = SHARED_EVAL
RESULTS = ROOT / "benchmarks" / "RESULTS.md"


def cell(r: dict, m: str = "spearman") -> str:
    """Turn level: 'r* [low, high]' (* = interval excludes 0). System level: 'r [low, high] p=..'
    (no star: with 4-6 systems the item-resampling interval says little; the exact p says more)."""
    from core.formatting import fmt_num
    if r.get("error"):
        return "failed"
    v = r.get(m)
    if v is None or not math.isfinite(v):
        return "n/a" if r.get("n", 0) == 0 else "-"
    ci = f"[{fmt_num(r[f'{m}_low'])}, {fmt_num(r[f'{m}_high'])}]"
    if r.get("level") == "system":
        return f"{fmt_num(v)} {ci} p={fmt_num(r.get(f'{m}_p'), p=True)}"
    star = "*" if r.get(f"{m}_low", math.nan) > 0 or r.get(f"{m}_high", math.nan) < 0 else ""
    return f"{fmt_num(v)}{star} {ci}"


def build_report(rows: list[dict], metrics: list[str], datasets: list[str], failed_modules: dict[str, str],
                 command: str, started: str, seconds: float, args, commit: str | None = None) -> str:
    from core.meta_eval import format_rows, summarize
    from core.formatting import fmt_num
    from core.report import render
    L = ["## Quality: correlation with human ratings", "",
         f"Made by `{command}` on {started} UTC (commit {commit or git_commit()}, {os.cpu_count()} CPU cores, "
         f"Python {platform.python_version()}), in {seconds / 60:.1f} min. Bootstrap: {args.n_boot} resamples, "
         f"seed {args.seed}, 95% percentile intervals; contexts are resampled where several rows share one (and "
         "the interval and p there are never surer than the small-sample t or Fisher z give: docs/statistics.md). "
         "Rows whose response copies its reference are dropped for every metric (counted in the full table). "
         "`*` = interval excludes 0. `n/a` = the metric cannot apply (e.g. no references in the set).", ""]
    if args.max_rows:
        L += [f"**Subsampled**: at most ~{args.max_rows} rows (whole contexts) per dataset.", ""]
    summ = summarize(rows)
    # cells every summarized metric could score: the fair basis for comparing their means
    ok = {}
    for r in rows:
        if r.get("level") == "turn" and not r.get("error") and r.get("spearman") is not None \
                and math.isfinite(r["spearman"]):
            ok.setdefault((r["dataset"], r["dimension"]), {})[r["metric"]] = r["spearman"]
    names = [s["metric"] for s in summ if s["cells"]]
    shared = [v for v in ok.values() if all(m in v for m in names)]
    L += ["### Summary (turn level, Spearman)", "",
          f"mean (shared) = mean over the {len(shared)} dataset x dimension cells that every metric below with any "
          "result could score (the fair comparison); mean (all) = over every cell the metric could score.", "",
          render([{"metric": s["metric"], "mean": fmt_num(s["mean"]), "cells": str(s["cells"]),
                   "shared": fmt_num(sum(v[s["metric"]] for v in shared) / len(shared))
                   if shared and s["metric"] in names else "-",
                   "pos": str(s["positive"]), "ds": str(s["datasets"]), "failed": str(s["failed"])} for s in summ],
                 [("metric", "metric"), ("shared", "mean (shared)"), ("mean", "mean (all)"),
                  ("cells", "dataset x dimension cells"),
                  ("pos", "cells with CI > 0"), ("ds", "datasets"), ("failed", "failed datasets")], "markdown"), ""]
    # metric x (dataset, dimension) matrix
    turn = [r for r in rows if r.get("level") == "turn" and r.get("dimension") != "*"]
    keys = list(dict.fromkeys((r["dataset"], r["dimension"]) for r in turn))
    by = {(r["metric"], r["dataset"], r["dimension"]): r for r in turn}
    errs = {(r["metric"], r["dataset"]): r for r in rows if r.get("error")}
    mat = []
    for ds, dim in keys:
        rec = {"ds": ds, "dim": dim, "n": str(max((by[(m, ds, dim)]["n"] for m in metrics if (m, ds, dim) in by),
                                                default=0))}
        for m in metrics:
            rec[m] = cell(by[(m, ds, dim)]) if (m, ds, dim) in by else ("failed" if (m, ds) in errs else "")
        mat.append(rec)
    L += ["### Spearman [95% CI] per dataset and dimension (turn level)", "",
          render(mat, [("ds", "dataset"), ("dim", "dimension"), ("n", "n (max)")] + [(m, m) for m in metrics],
                 "markdown"), ""]
    sysrows = [r for r in rows if r.get("level") == "system"]
    if sysrows:
        keys = list(dict.fromkeys((r["dataset"], r["dimension"]) for r in sysrows))
        sby = {(r["metric"], r["dataset"], r["dimension"]): r for r in sysrows}
        smat = []
        for ds, dim in keys:
            n = max((sby[(m, ds, dim)]["n"] for m in metrics if (m, ds, dim) in sby), default=0)
            rec = {"ds": ds, "dim": dim, "n": str(n)}
            for m in metrics:
                rec[m] = cell(sby[(m, ds, dim)]) if (m, ds, dim) in sby else ""
            smat.append(rec)
        L += ["### System level: Spearman of per-system means [95% CI over resampled contexts], p", "",
              "Most sets have 4-6 systems (dailydialog-zhao has 20): with so few points a system-level "
              "correlation is fragile (leaving one system out can flip it; the interval only reflects which "
              "contexts were rated). p is exact (permutation) for up to 8 systems. Illustrations, not a "
              "ranking of metrics.", "",
              render(smat, [("ds", "dataset"), ("dim", "dimension"), ("n", "systems")] + [(m, m) for m in metrics],
                     "markdown"), ""]
    fails = [r for r in rows if r.get("error")]
    if fails or failed_modules:
        L += ["### Failures", ""]
        L += [f"- module `core.metrics.{k}` could not be imported: {v}" for k, v in failed_modules.items()]
        L += [f"- `{r['metric']}` on {r['dataset']}: {r['error'][:300]}" for r in fails]
        L += [""]
    L += ["<details><summary>Full table (all three correlations, p-values, n, exclusions)</summary>", "",
          format_rows([r for r in rows if not r.get("error")], "markdown"), "", "</details>", ""]
    return "\n".join(L)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", default=str(DEFAULT_DATA), help="folder of the rated *.jsonl sets")
    p.add_argument("--metrics", default="all", help="comma-separated metric names (default: every registered)")
    p.add_argument("--datasets", help="comma-separated dataset names (file stems); default: all")
    p.add_argument("--n-boot", type=int, default=1000)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--max-rows", type=int, help="cap each dataset at about this many rows (whole contexts)")
    p.add_argument("--no-system-level", action="store_true")
    p.add_argument("--out", default=str(RESULTS), help="markdown file whose quality section is replaced")
    p.add_argument("--json", help="also write every row (and how they were made) as JSON here")
    p.add_argument("--from-json", help="re-render the report from an earlier --json file (no scoring)")
    args = p.parse_args(argv)
    if args.from_json:
        saved = json.loads(Path(args.from_json).read_text())
        meta = saved["meta"]
        for k in ("n_boot", "seed", "max_rows"):
            setattr(args, k, meta[k])
        report = build_report(saved["rows"], meta["metrics"], meta["datasets"], meta["failed_modules"],
                              meta["command"], meta["started"], meta["seconds"], args, meta.get("commit"))
        replace_section(Path(args.out), "quality", report)
        print(report)
        return 0

    import torch
    torch.set_num_threads(int(os.environ.get("DIALEVAL_THREADS", "1")))
    os.environ.setdefault("DIALEVAL_THREADS", "1")
    from core.data import load_jsonl
    from core.meta_eval import meta_evaluate
    from core.scoring import available_metrics
    from core.report import to_json

    data_dir = Path(args.data_dir)
    if not data_dir.is_dir():
        print(f"error: {data_dir} not found (the shared human-rated data sits beside the repository; "
              "or pass --data-dir)", file=sys.stderr)
        return 2
    files = sorted(data_dir.glob("*.jsonl"))
    if args.datasets:
        want = [d.strip() for d in args.datasets.split(",") if d.strip()]
        missing = [d for d in want if not (data_dir / f"{d}.jsonl").exists()]
        if missing:
            print(f"error: no such dataset(s) {missing}; have {[f.stem for f in files]}", file=sys.stderr)
            return 2
        files = [data_dir / f"{d}.jsonl" for d in want]
    failed_modules = load_registry_tolerantly()
    known = list(available_metrics())
    metrics = known if args.metrics == "all" else [m.strip() for m in args.metrics.split(",") if m.strip()]
    unknown = [m for m in metrics if m not in known]
    if unknown:
        print(f"error: unknown metric(s) {unknown}; registered: {known}", file=sys.stderr)
        return 2
    started = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M")
    t0 = time.time()
    rows: list[dict] = []
    log = lambda s: print(f"[{time.time() - t0:7.1f}s] {s}", file=sys.stderr, flush=True)  # noqa: E731
    for f in files:
        exs = load_jsonl(f)
        name = exs[0].dataset or f.stem
        for m in metrics:  # one metric at a time, so a failure or a slow metric is visible in the log
            rows += meta_evaluate({name: exs}, [m], n_boot=args.n_boot, seed=args.seed, on_error="record",
                                  system_level=not args.no_system_level, max_rows=args.max_rows, log=log)
    command = "python benchmarks/quality.py" + ("" if argv is None and len(sys.argv) == 1 else " " + shlex.join(
        argv if argv is not None else sys.argv[1:]))
    seconds = time.time() - t0
    report = build_report(rows, metrics, [f.stem for f in files], failed_modules, command, started, seconds, args)
    replace_section(Path(args.out), "quality", report)
    if args.json:
        meta = {"command": command, "started": started, "commit": git_commit(), "seconds": seconds, "metrics": metrics,
                "datasets": [f.stem for f in files], "failed_modules": failed_modules, "n_boot": args.n_boot,
                "seed": args.seed, "max_rows": args.max_rows}
        Path(args.json).write_text(to_json({"meta": meta, "rows": rows}) + "\n", encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
