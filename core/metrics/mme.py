"""MME-CRS (METHODS.md §4): nine sub-metrics and their correlation re-scaled combination.

Registered metrics (all in [0, 1], higher = better on that aspect):
  mme_fm       fluency            MiniLM (top layer fine-tuned) on the response alone
  mme_rm       relevance          MLP on frozen MiniLM (context, response) vectors, semi-hard negatives
  mme_tcm      topic coherence    keyword graph + 2 GAT layers on MiniLM static word-piece vectors
  mme_em       engagement         ridge on frozen MiniLM features, trained on engagement-dd (1-5 -> [0,1])
  mme_sm_nll   specificity        SmolLM2 total surprisal of the response (read alone)
  mme_sm_nce   specificity        SmolLM2 mean (log p + entropy) of the response tokens
  mme_sm_ppl   specificity        SmolLM2 perplexity of the response
  mme_pm_share    context PMI     share of response tokens the context makes likelier (SmolLM2, chat format)
  mme_pm_evidence context PMI     the new tokens' total PMI with the context over the root of their count
  mme_avg      plain mean of the nine normalized sub-metrics (MME-Avg)
  mme          CRS-weighted sum for a dimension (the ``dimension`` option, default "overall"), weights from
               the shipped crs_weights.json; ``held_out_for(dataset)`` refits them without that dataset.

Every sub-metric is a percentile: its raw value (a classifier's probability, a regression, an LM statistic)
is mapped to [0, 1] by the empirical CDF of a fixed reference distribution of held-out chitchat pairs
(quantiles stored in checkpoints/mme-sm.safetensors for SM and checkpoints/mme-ref.safetensors for the
others), so a score never depends on the batch it is computed in and the CRS sum adds comparable scales.
The PM group is not in the paper (docs/mme.md says why it was added and how it was chosen). Training
(``core/training/mme.py``, ``core/training/crs.py``): ``dialeval train mme fm|rm|tcm|em|sm|ref``; CRS:
``dialeval train crs --data FILE...``. See docs/mme.md.
"""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from core.data import Example
from core.metrics import crs as crs_mod
from core.models import checkpoints
from core.models.batching import in_fixed_rows
from core.models.device import active_device, computed_on
from core.models.encoders import SMOLLM_THREADS
from core.models.memo import remembers
from core.progress import Progress, share_of, tick
from core.scoring import Metric, MetricResult, Options, Signature, register_metric
from core.settings import checkpoint_file

SUBMETRICS = ("fm", "rm", "tcm", "em", "sm_nll", "sm_nce", "sm_ppl", "pm_share", "pm_evidence")
GROUPS = {"FM": ("fm",), "RM": ("rm",), "TCM": ("tcm",), "EM": ("em",), "SM": ("sm_nll", "sm_nce", "sm_ppl"),
          "PM": ("pm_share", "pm_evidence"), "RM+TCM": ("rm", "tcm")}
CKPT = {"fm": "mme-fm", "rm": "mme-rm", "tcm": "mme-tcm", "em": "mme-em",
        "sm_nll": "mme-sm", "sm_nce": "mme-sm", "sm_ppl": "mme-sm", "pm_share": "mme-ref", "pm_evidence": "mme-ref"}
REFERENCE = "mme-ref"  # reference quantiles of the sub-metrics below (SM keeps its own in mme-sm)
REFERENCED = ("fm", "rm", "tcm", "em", "pm_share", "pm_evidence")
FAMILIES = {"fm": ("fm",), "rm": ("rm",), "tcm": ("tcm",), "em": ("em",), "sm": ("sm_nll", "sm_nce", "sm_ppl"),
            "pm": ("pm_share", "pm_evidence")}
WEIGHTS_NAME = "crs_weights.json"
# the kind of CPU (core.models.device.device_key) whose eval scores the shipped crs_weights.json was fitted on:
# SmolLM2's bfloat16 sub-metrics differ a little on other kinds (docs/architecture.md, "Kinds of CPU")
WEIGHTS_COMPUTED_ON = "cpu-avx512-bf16"
EM_TRAINED_ON = ("engagement-dd",)  # the rated set EM's regressor learned from (checkpoints/mme-em.json)
# the DSTC10 Track 5 development sets CRS is fitted on (engagement-dd trains EM, holistic-dd is extra)
DEV_SETS = ("usr-topical", "usr-persona", "dailydialog-zhao", "persona-zhao", "convai2-grade",
            "dailydialog-grade", "empathetic-grade", "fed-turn", "humod", "dstc7", "dailydialog-gupta")
DESCRIPTIONS = {
    "fm": "MME fluency: MiniLM classifier of real vs. perturbed responses",
    "rm": "MME relevance: MiniLM (context, response) classifier with semi-hard negatives",
    "tcm": "MME topic coherence: keyword graph + GAT classifier",
    "em": "MME engagement: regressor on human engagement scores",
    "sm_nll": "MME specificity: SmolLM2 total surprisal of the response (normalized)",
    "sm_nce": "MME specificity: SmolLM2 mean log-prob + entropy of the response tokens (normalized)",
    "sm_ppl": "MME specificity: SmolLM2 perplexity of the response (normalized)",
    "pm_share": "MME context PMI: share of response tokens the context makes likelier (SmolLM2, normalized)",
    "pm_evidence": "MME context PMI: total PMI of the response's new tokens and the context / sqrt(count) (normalized)",
}
FAMILY_OF = {sub: fam for fam, subs in FAMILIES.items() for sub in subs}
# what one row costs in each family, relative to the fluency model's row (SmolLM2's passes, sm and pm, dominate;
# measured on 2 float32 cores): the progress bar moves by cost, so its time left holds from the first family on
FAMILY_COST = {"fm": 1.0, "rm": 8.0, "tcm": 0.5, "em": 0.5, "sm": 14.0, "pm": 64.0}


def _m():
    from core.models import mme_models  # torch-heavy: imported when a sub-metric first runs
    return mme_models


def weights_file() -> Path:
    """The CRS weights (``crs_weights.json`` in the first checkpoint folder holding it)."""
    return checkpoint_file(WEIGHTS_NAME)


# ============================================================================ inference
def em_features(contexts: Sequence[str], responses: Sequence[str], embed=None) -> np.ndarray:
    """[e_c, e_r, e_c * e_r, cos, log(1 + words)] from frozen MiniLM sentence embeddings."""
    from core.models.encoders import encode
    embed = embed or (lambda t: encode(list(t)))
    ec = embed(list(contexts))
    er = embed(list(responses))
    lw = np.log1p([len(r.split()) for r in responses])[:, None]
    cos = (ec * er).sum(1, keepdims=True)
    return np.hstack([ec, er, ec * er, cos, lw]).astype(np.float64)


class MMEScorer:
    """Loads the sub-metric models lazily (once per process) and scores examples; results are cached
    per (sub-metric, context, response) so mme, mme_avg and the single sub-metrics share the work."""

    def __init__(self):
        self._models: dict[str, Any] = {}
        self._cache: dict[tuple[str, str, str, str], float] = {}  # (sub, device, context, response) -> score
        remembers(self.forget)

    def forget(self) -> None:
        """Drop every remembered sub-score (the models stay loaded)."""
        self._cache.clear()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """MiniLM sentence embeddings (``core.models.encoders.encode``, remembered per text and shared with the
        other metrics: RM, EM, BERT-RUBER and υBLEU read each text's vector once)."""
        from core.models.encoders import encode
        return encode(list(texts))

    def load(self, which: str):
        """The model (or reference) behind a family of sub-metrics, loaded once: fm, rm, tcm, em, sm, pm, ref."""
        if which in self._models:
            return self._models[which]
        M = _m()
        if which in ("rm", "tcm"):
            tensors, _ = checkpoints.load(f"mme-{which}")
            model = M.PairHead() if which == "rm" else M.TCMNet()
            model.load_state_dict(tensors)
            model.eval()
        elif which == "fm":
            tensors, man = checkpoints.load(CKPT[which])
            cfg = man["config"]
            model = M.MiniLMClassifier(n_train=cfg["trained_layers"], pair=cfg["pair"], max_len=cfg["max_len"])
            model.load_trained(tensors)
            model.eval()
        elif which == "em":
            tensors, _ = checkpoints.load("mme-em")
            model = (tensors["coef"].double().numpy(), float(tensors["intercept"][0]))
        elif which == "sm":
            tensors, _ = checkpoints.load("mme-sm")
            model = ({k: v.numpy() for k, v in tensors.items()}, M.SmolScorer())
        elif which == "pm":
            model = M.PMIScorer()
        elif which == "ref":
            tensors, _ = checkpoints.load(REFERENCE)
            model = {k: v.double().numpy() for k, v in tensors.items()}
        else:
            raise KeyError(which)
        self._models[which] = model
        return model

    def raw_scores(self, family: str, ctx: Sequence[str], resp: Sequence[str], progress=None, done0: int = 0,
                   total: int | None = None) -> dict[str, np.ndarray]:
        """The raw values of one family's sub-metrics (before the percentile mapping of :meth:`normalize`) for
        contexts (turns joined by newlines) and non-empty responses. SM: (nll, nce, ppl); PM: (share, mean)."""
        M = _m()
        total = len(resp) if total is None else total
        prog = (lambda d, n, desc: tick(progress, done0 + d, total, desc)) if progress else None
        if prog is not None and family in ("pm", "sm"):  # SmolLM2's first load: said, not a bar that stands still
            from core.models.encoders import smollm_first_load
            first = smollm_first_load()
            if first:
                prog(0, len(resp), f"MME {family}: {first}")
        if family == "fm":
            return {"fm": self.load("fm").predict(list(resp), progress=prog, desc="MME fluency")}
        if family == "rm":
            model = self.load("rm")
            return {"rm": model.predict(self.embed([M.context_text(c.split("\n")) for c in ctx]), self.embed(list(resp)))}
        if family == "tcm":
            return {"tcm": self.load("tcm").predict([M.context_text(c.split("\n")) for c in ctx], list(resp))}
        if family == "em":
            coef, b = self.load("em")
            X = em_features([M.context_text(c.split("\n")) for c in ctx], list(resp), embed=self.embed)
            return {"em": np.clip(in_fixed_rows(lambda x: x @ coef, X) + b, 0.0, 1.0)}
        if family == "pm":
            pm = self.load("pm")
            raw = pm.raw([c.split("\n") for c in ctx], list(resp), progress=prog, desc="MME context PMI")
            return {"pm_share": raw[:, 0], "pm_evidence": raw[:, 1]}
        _, sc = self.load("sm")
        raw = sc.raw(["\n".join(c.split("\n")[-M.CTX_TURNS:]) for c in ctx], list(resp), progress=prog,
                     desc="MME specificity")
        return {"sm_nll": raw[:, 0], "sm_nce": raw[:, 1], "sm_ppl": raw[:, 2]}

    def normalize(self, sub: str, raw: np.ndarray) -> np.ndarray:
        """Percentile of each raw value in the sub-metric's reference distribution (held-out chitchat pairs)."""
        M = _m()
        if sub.startswith("sm_"):
            quant, _ = self.load("sm")
            return M.ecdf_normalize(raw, quant[sub[3:]])
        return M.ecdf_normalize(raw, self.load("ref")[sub])

    def unread(self, contexts: Sequence[Sequence[str]], replies: Sequence[str],
               subs: Sequence[str] = SUBMETRICS) -> int:
        """How many distinct non-empty (context, reply) items :meth:`score` would still read for ``subs``."""
        dev = {s: memory_key(s) for s in subs}
        keys = {("\n".join(c), (r or "").strip()) for c, r in zip(contexts, replies)}
        return sum(1 for k in keys if k[1] and any((s, dev[s], *k) not in self._cache for s in subs))

    def score(self, examples: Sequence[Example], subs: Sequence[str] = SUBMETRICS,
              progress: Progress | None = None) -> dict[str, np.ndarray]:
        """sub -> normalized scores in [0, 1] (NaN for an empty response)."""
        dev = {s: memory_key(s) for s in SUBMETRICS}  # remembered per device (and precision, memory_key)
        keys = [("\n".join(e.context), (e.response or "").strip()) for e in examples]
        out = {s: np.full(len(examples), np.nan) for s in subs}
        families = list(dict.fromkeys(FAMILY_OF[s] for s in subs))
        todo_fam = {}
        for fam in families:
            need = sorted({k for k in keys if k[1] and any((s, dev[s], *k) not in self._cache for s in FAMILIES[fam])})
            todo_fam[fam] = need
        total = sum(len(v) for v in todo_fam.values())
        cost = {fam: len(need) * FAMILY_COST[fam] for fam, need in todo_fam.items()}
        whole, spent = sum(cost.values()) or 1.0, 0.0
        last = [fam for fam, need in todo_fam.items() if need][-1:]
        for fam, need in todo_fam.items():
            if need:  # the bar counts rows, placed by each family's share of the cost (core.progress.share_of)
                end = 1.0 if [fam] == last else (spent + cost[fam]) / whole
                part = share_of(progress, spent / whole, end, total)
                res = self.raw_scores(fam, [k[0] for k in need], [k[1] for k in need], part)
                for s, vals in res.items():
                    for k, v in zip(need, self.normalize(s, vals)):
                        self._cache[(s, dev[s], *k)] = float(v)
                spent += cost[fam]
                tick(part, len(need), len(need), f"MME {fam}")
        for s in subs:
            out[s] = np.array([self._cache.get((s, dev[s], *k), np.nan) if k[1] else np.nan for k in keys])
        return out


def memory_key(sub: str) -> str:
    """Where a sub-score was computed, as the in-process memory keys it: the active device (each device's kernels
    round differently), and for RM and EM, which read MiniLM sentence vectors, their precision too
    (``core.models.device.computed_on``); FM runs its own float32 MiniLM, SM and PM SmolLM2."""
    return computed_on() if FAMILY_OF[sub] in ("rm", "em") else active_device()


@functools.lru_cache(maxsize=1)
def scorer() -> MMEScorer:
    return MMEScorer()


def checkpoint_hash(sub: str) -> str:
    """Short hash of the checkpoints behind sub-metric ``sub`` (its model and, for the sub-metrics mapped by
    ``mme-ref``, that reference too): signatures and caches are keyed by it."""
    h = checkpoints.short_hash(CKPT[sub])
    if sub in REFERENCED and CKPT[sub] != REFERENCE:
        h += "+" + checkpoints.short_hash(REFERENCE)
    return h


class _MMESub(Metric):
    sub: str = ""

    def compute(self, examples, progress=None) -> MetricResult:
        s = scorer().score(examples, [self.sub], progress)[self.sub]
        return MetricResult(self.name, s, self.signature())

    def trained_on(self) -> list[str]:
        return list(EM_TRAINED_ON) if FAMILY_OF[self.sub] == "em" else []

    def signature(self) -> Signature:
        return Signature(self.name, variant=self.sub, checkpoint=checkpoint_hash(self.sub))


# how much of a response the readers read (Metric.reads_response): mme_models.SM_RESP_TOKENS and FM_MAX_LEN (that
# module loads torch, so the numbers are written here; tests/test_mme.py checks they agree)
READS_SMOLLM = (30, "40 SmolLM2 tokens")
READS = {"sm": READS_SMOLLM, "pm": READS_SMOLLM, "fm": (30, "40 MiniLM word pieces")}

for _sub in SUBMETRICS:
    register_metric(f"mme_{_sub}")(type(f"MME_{_sub.upper()}", (_MMESub,), {
        "sub": _sub, "description": DESCRIPTIONS[_sub],
        "pass_threads": SMOLLM_THREADS if FAMILY_OF[_sub] in ("sm", "pm") else None,
        "models": ("smollm2",) if FAMILY_OF[_sub] in ("sm", "pm") else ("minilm",),
        "reads_sentence_vectors": FAMILY_OF[_sub] in ("rm", "em"),
        "reads_response": READS.get(FAMILY_OF[_sub])}))


def all_checkpoints_hash() -> str:
    """A short hash of every sub-metric's checkpoints (mme, mme_avg and a judge reading MME-CRS depend on them)."""
    h = hashlib.sha256("|".join(checkpoint_hash(s) for s in SUBMETRICS).encode()).hexdigest()
    return h[:10]


@register_metric("mme_avg")
class MMEAvg(Metric):
    reads_sentence_vectors = True  # its RM and EM parts
    description = "MME-Avg: plain mean of the nine normalized MME sub-metrics"
    pass_threads = SMOLLM_THREADS  # its SM and PM parts read with SmolLM2
    models = ("minilm", "smollm2")
    reads_response = READS_SMOLLM

    def compute(self, examples, progress=None) -> MetricResult:
        subs = scorer().score(examples, SUBMETRICS, progress)
        scores = crs_mod.combine(subs, {k: 1.0 for k in SUBMETRICS})
        details = [{"sub_scores": {k: _f(subs[k][i]) for k in SUBMETRICS}} for i in range(len(examples))]
        return MetricResult(self.name, scores, self.signature(), details)

    def signature(self) -> Signature:
        return Signature(self.name, variant=f"avg{len(SUBMETRICS)}", checkpoint=all_checkpoints_hash())

    def trained_on(self) -> list[str]:
        return list(EM_TRAINED_ON)  # its EM part


def _f(x: float) -> float | None:
    return None if not np.isfinite(x) else round(float(x), 4)


@register_metric("mme")
class MMECRS(Metric):
    """CRS-weighted MME score for one dimension (the ``dimension`` option, default "overall").

    ``dimension``: any name, mapped by ``core.metrics.crs.canonical_dimension`` (unknown -> overall weights).
    Settings: ``weights`` (path of a crs_weights.json, default the shipped one), ``exclude`` (datasets whose
    correlations are left out when fitting, for leave-one-dataset-out), ``drop`` (sub-metrics left out)."""

    reads_sentence_vectors = True  # its RM and EM parts
    description = "MME-CRS: sub-metrics weighted by correlation re-scaling for a dimension (dimension=overall)"
    option_names = ("dimension",)
    pass_threads = SMOLLM_THREADS  # its SM and PM parts read with SmolLM2
    models = ("minilm", "smollm2")
    reads_response = READS_SMOLLM

    def __init__(self, options: Options | None = None, weights: str | None = None, exclude: Sequence[str] = (),
                 drop: Sequence[str] = ()):
        super().__init__(options)
        self.dimension = self.options.dimension or "overall"
        self.weights_path = Path(weights) if weights else weights_file()
        self.exclude = tuple(exclude)
        self.drop = tuple(drop)
        if not self.weights_path.exists():
            raise checkpoints.CheckpointError(
                f"CRS weights {self.weights_path} not found; fit them with `dialeval train crs --data FILE...`")
        self.file = crs_mod.load_weights_file(self.weights_path)
        self.subs = tuple(k for k in SUBMETRICS if k not in self.drop)
        if self.exclude or self.drop:
            self.weights = crs_mod.fit_weights(self.file["correlations"], self.subs, exclude=self.exclude,
                                               drop=self.drop, power=self.file.get("power", crs_mod.POWER))
        else:
            self.weights = self.file["weights"]

    def trained_on(self) -> list[str]:
        """The sets its CRS weights were fitted on (less those it is held out from) and EM's training set."""
        fitted = [d for d in self.file.get("correlations", {}) if d not in self.exclude]
        return fitted + [d for d in EM_TRAINED_ON if d not in fitted]

    def held_out_for(self, dataset: str) -> "MMECRS | None":
        """The same metric with CRS weights fitted without ``dataset`` (leave-one-dataset-out), or None when
        the weights never saw ``dataset``. Note: EM was trained on engagement-dd, so engagement-dd is never
        a clean held-out set for EM (it is not among the CRS sets, hence None here; :meth:`trained_on` names it,
        so meta-evaluation marks its rows)."""
        if dataset not in self.file.get("correlations", {}) or dataset in self.exclude:
            return None
        return MMECRS(self.options, str(self.weights_path), self.exclude + (dataset,), self.drop)

    def for_dimension(self, dimension: str) -> "MMECRS":
        return MMECRS(Options(dimension=dimension), str(self.weights_path), self.exclude, self.drop)

    def scores_for_dimension(self, result: MetricResult, dimension: str) -> np.ndarray:
        """The scores of ``result`` re-weighted for a human ``dimension`` (meta-evaluation asks for each
        dimension of a set; the sub-metrics are scored once)."""
        canon, w, how = self.weights_for(dimension)
        by_dim = result.extra.get("by_dimension", {})
        if how == "fitted" and canon in by_dim and len(by_dim[canon]) == len(result.scores):
            out = np.array(by_dim[canon], dtype=np.float64)
        else:  # from the stored sub-scores: a result read from the cache, or cut to some rows, keeps no by_dimension
            stored = [(d or {}).get("sub_scores") or {} for d in (result.details or [{}] * len(result.scores))]
            subs = {k: np.array([np.nan if d.get(k) is None else d[k] for d in stored], dtype=np.float64)
                    for k in self.subs}
            out = np.asarray(crs_mod.combine(subs, w), dtype=np.float64)
        out[~np.isfinite(result.scores)] = np.nan  # a row not scored (a blank reply) is unscored for every dimension
        return out

    def rescored(self, result: MetricResult) -> np.ndarray | None:
        """The CRS sum (eq. 6 of METHODS.md §4) of ``result``'s stored sub-scores under this instance's weights:
        a held-out instance scores rows another MME-CRS instance scored without reading them again."""
        if result.details is None:
            return None
        stored = [(d or {}).get("sub_scores") or {} for d in result.details]  # none: a row not scored (blank)
        subs = {k: np.array([np.nan if d.get(k) is None else d[k] for d in stored], dtype=np.float64)
                for k in self.subs}
        return np.asarray(crs_mod.combine(subs, self.weights_for()[1]), dtype=np.float64)

    def weights_for(self, dimension: str | None = None) -> tuple[str, dict[str, float], str]:
        return crs_mod.resolve(dimension or self.dimension, self.weights, self.subs)

    def compute(self, examples, progress=None) -> MetricResult:
        subs = scorer().score(examples, self.subs, progress)
        canon, w, how = self.weights_for()
        scores = crs_mod.combine(subs, w)
        wr = {k: round(v, 4) for k, v in w.items()}
        details = [{"dimension": self.dimension, "canonical_dimension": canon, "weights_from": how, "weights": wr,
                    "sub_scores": {k: _f(subs[k][i]) for k in self.subs}} for i in range(len(examples))]
        by_dim = {c: crs_mod.combine(subs, self.weights_for(c)[1]) for c in self.weights}
        return MetricResult(self.name, scores, self.signature(), details,
                            extra={"dimension": self.dimension, "canonical_dimension": canon, "weights_from": how,
                                   "weights": wr, "by_dimension": by_dim})

    def signature(self) -> Signature:
        canon, _, how = self.weights_for()
        var = f"crs-d{self.file.get('power', 2)}-{canon}" + ("" if how == "fitted" else f"-{how}")
        if self.exclude:
            var += "-lodo:" + "+".join(self.exclude)
        if self.drop:
            var += "-drop:" + "+".join(self.drop)
        return Signature(self.name, variant=var,
                         checkpoint=all_checkpoints_hash() + "+" + checkpoints.weights_hash(self.weights_path))


