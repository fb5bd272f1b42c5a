"""Words a person reads on the dashboard: each metric's display name (υBLEU, BERT-RUBER, MME-CRS, "the judge"), its
help in one plain sentence (what it rewards, when to trust it, with the trust measured at the system level:
``checkpoints/verdict-policy.json``'s records, benchmarks/SYSTEM_LEVEL.md) and intervals said as "between x and y".
Ids (``bert_ruber``) stay what the command line, the address and the files use; only what is drawn changes."""
from __future__ import annotations

import math
import re

from core.engine import META_EVAL_LEAVES_COPIES
from core.formatting import fmt_list

PROMINENT_NOTES = ("look-alike systems", "blank response", "not latin")
"""The input notes (``core.engine.input_notes``' kinds) a page shows as warnings, not folded among the others: they
change how a number is read (two systems that print alike, replies left out of every metric's n, replies the
English-trained models read as noise)."""

DISPLAY = {
    "bleu": "BLEU", "ubleu": "υBLEU", "ubleu_paper": "υBLEU (as in the paper)", "ruber": "RUBER",
    "ruber_ref": "RUBER (referenced part)", "ruber_unref": "RUBER (unreferenced part)", "ruber_ubleu": "RUBER+υBLEU",
    "bert_ruber": "BERT-RUBER", "bert_ruber_ref": "BERT-RUBER (referenced part)",
    "bert_ruber_unref": "BERT-RUBER (unreferenced part)", "adem": "ADEM", "mme": "MME-CRS", "mme_avg": "MME-Avg",
    "mme_em": "MME engagement", "mme_fm": "MME fluency", "mme_rm": "MME relevance", "mme_tcm": "MME topic coherence",
    "mme_sm_nce": "MME specificity (log-prob)", "mme_sm_nll": "MME specificity (surprisal)",
    "mme_sm_ppl": "MME specificity (perplexity)", "mme_pm_evidence": "MME context fit (evidence)",
    "mme_pm_share": "MME context fit (share)", "judge": "the judge",
}

PLAIN = {
    "bleu": "Rewards replies that repeat the reference's words and word pairs; trust it only when there is one right "
            "answer, since a good reply in other words scores low.",
    "ubleu": "BLEU against the reference plus 50 similar replies found for the context, so a good reply in other "
             "words can still score; but short generic replies (\"ok.\", \"i don't know.\") match retrieved ones "
             "and can outscore engaged replies, so it never decides alone: only with the judge in the verdict's "
             "combined test.",
    "ubleu_paper": "υBLEU as its paper built it (15 retrieved references rated by a small network); for reproducing "
                   "the paper, not for a verdict.",
    "ruber": "Rewards replies close in meaning to the reference and fitting the context (two learned scores "
             "averaged); a diagnostic.",
    "ruber_ref": "Closeness in meaning to the reference alone (word vectors); part of RUBER.",
    "ruber_unref": "How well the reply fits the context, learned from real conversations; part of RUBER.",
    "ruber_ubleu": "RUBER with υBLEU in place of its reference part (the υBLEU paper's best method); a diagnostic.",
    "bert_ruber": "Rewards replies that fit the context and mean what the reference means (contextual sentence "
                  "vectors); often right at the system level.",
    "bert_ruber_ref": "Closeness in meaning to the reference (contextual vectors); part of BERT-RUBER.",
    "bert_ruber_unref": "How well the reply fits the context, learned from real conversations; part of BERT-RUBER.",
    "adem": "A score trained to predict people's 1-5 ratings from the context, reference and reply; trust it on "
            "data like what it was trained on.",
    "mme": "Several learned checks (fluent, relevant, specific, engaging, on topic) weighted by how well each "
           "follows people's ratings.",
    "mme_avg": "The plain average of MME's sub-metrics; a diagnostic.",
    "mme_em": "Predicts how engaging people find the reply; one of MME-CRS's parts.",
    "mme_fm": "Whether the reply reads as fluent, natural text; one of MME-CRS's parts.",
    "mme_rm": "Whether the reply is relevant to the context; one of MME-CRS's parts.",
    "mme_tcm": "Whether the reply keeps to the context's topic; one of MME-CRS's parts.",
    "mme_sm_nce": "How specific (not generic) the reply is, by a small language model; one of MME-CRS's parts.",
    "mme_sm_nll": "How specific (surprising) the reply is, by a small language model; one of MME-CRS's parts.",
    "mme_sm_ppl": "How specific the reply is, by a small language model's perplexity; one of MME-CRS's parts.",
    "mme_pm_evidence": "How much the context makes the reply's new words likelier; one of MME-CRS's parts.",
    "mme_pm_share": "The share of the reply's words the context makes likelier; one of MME-CRS's parts.",
}


def name(metric: str) -> str:
    """A metric's display name ('bert_ruber' -> 'BERT-RUBER'); 'human:overall' -> 'people's overall rating'; an
    unknown id as it is."""
    if metric.startswith("human:"):
        return f"people's {metric[len('human:'):]} rating"
    if metric.startswith("combined: "):  # the verdict's combined test ('combined: bleu+judge+mme')
        return "combined: " + "+".join(DISPLAY.get(s, s) for s in metric[len("combined: "):].split("+"))
    return DISPLAY.get(metric, metric)


def progress_words(desc: str) -> str:
    """A progress line's description with the metric it names in words: 'bert_ruber_unref: MiniLM' ->
    'BERT-RUBER (unreferenced part): MiniLM', 'MME fm' -> 'MME fluency' (the engine's lines name registry ids,
    which a command-line user types; a dashboard user sees the names of the sidebar). Anything else as it is."""
    head, sep, rest = desc.partition(":")
    if head.startswith("MME "):  # 'MME fm', 'MME sm': a family of MME-CRS's sub-metrics
        family = "mme_" + head[len("MME "):].strip()
        head = DISPLAY.get(family) or MME_FAMILIES.get(family, head)
    return in_words(head) + sep + rest


MME_FAMILIES = {"mme_sm": "MME specificity", "mme_pm": "MME context fit"}
"""MME-CRS's sub-metric families that run as one (each gives several scores): the names their progress lines get."""


def names(metrics) -> str:
    """'BLEU, υBLEU and MME-CRS'."""
    return fmt_list(name(m) for m in metrics)


def trust(metric: str) -> str:
    """'On rated data it named people's preferred system in 49 of 97 system pairs, the other one in 3.' from the
    shipped verdict policy's records; '' when the metric was not measured at the system level."""
    try:
        from core.verdict_policy import shipped_policy
        rec = shipped_policy().record(metric)
    except Exception:  # no policy file: the help still says what the metric rewards
        return ""
    if rec is None or not rec.pairs:
        return ""
    other = f", the other one in {rec.wrong}" if rec.wrong else ", never the other one"
    return (f"Measured on rated data: it named the system people prefer in {rec.right} of {rec.pairs} pairs of "
            f"systems{other}.")


def role(metric: str) -> str:
    """What the shipped verdict policy does with ``metric``, in one sentence ('' for a metric it never measured)."""
    try:
        from core.verdict_policy import shipped_policy
        shipped = shipped_policy()
    except Exception:
        return ""
    if shipped.policy.decides(metric):
        return "The verdict lets it decide."
    if metric in shipped.policy.combine:
        return "The verdict reads it within its combined test."
    if metric in shipped.policy.combinable():
        return "The verdict reads it only when a signal of its combined test is missing (the judge not run)."
    return "A diagnostic: shown, never deciding the verdict." if shipped.record(metric) is not None else ""


def verdict_basis() -> str:
    """'the combined test of BERT-RUBER, the judge and υBLEU' or 'MME-CRS': what the shipped verdict trusts."""
    from core.verdict_policy import shipped_policy
    policy = shipped_policy().policy
    if policy.combine:
        return "the combined test of " + names(policy.combine)
    return names([*(["judge"] if policy.judge != "off" else []), *policy.deciding_metrics]) or "no signal"


def help_text(metric: str, description: str = "") -> str:
    """One plain sentence on what ``metric`` rewards and when to trust it, then its measured system-level record
    and its role in the verdict."""
    first = PLAIN.get(metric) or (description.split(":")[0] + "." if description else name(metric) + ".")
    rest = " ".join(x for x in (trust(metric), role(metric)) if x)
    return first + (" " + rest if rest else "")


def between(low: float, high: float, fmt: str = "{:.3g}") -> str:
    """'between 0.12 and 0.48' (a dash where a bound is unknown)."""
    def one(x):
        return fmt.format(x) if x is not None and isinstance(x, (int, float)) and math.isfinite(x) else "-"
    return f"between {one(low)} and {one(high)}"


LLM_FORM = {"--llm-url": "the endpoint base URL", "--llm-model": "the model", "--llm-concurrency": "requests at once",
            "--llm-timeout": "the request timeout (command line: --llm-timeout)"}
"""The LLM judge's command-line flags its messages name, as the A/B judge page's form names them."""


def llm_form_words(message: str) -> str:
    """An LLM judge's message with its command-line flags named as the A/B judge page's form names them ('is
    --llm-url right?' -> 'is the endpoint base URL right?')."""
    for flag, said in LLM_FORM.items():
        message = message.replace(flag, said)
    return message


_METRIC_IDS = re.compile(r"(?<![\w.-])(" + "|".join(sorted((re.escape(k) for k in DISPLAY if k != "judge"),
                                                          key=len, reverse=True)) + r")(?![\w-]|\.\w)")


# pasted text goes by a file name (its extension says how to read it: views/upload.py); a person reads these words
PASTED = {"one": "the pasted text", "a": "the pasted text (system A)", "b": "the pasted text (system B)"}


def pasted_in_words(text: str) -> str:
    """``text`` with the file names pasted text goes by (``pasted-a.txt``) said as :data:`PASTED` says them."""
    for slot, said in PASTED.items():
        for ext in (".txt", ".csv"):
            text = text.replace(f"pasted-{slot}{ext}", said)
    return text


def in_words(text: str) -> str:
    """An engine's note with the metrics it names by id named as the sidebar names them ('mme, the judge read a
    reply's first 40 SmolLM2 tokens' -> 'MME-CRS, the judge read ...'), the command line's flags in the
    dashboard's terms and pasted text's file names as the upload page says them (:func:`pasted_in_words`); other
    file names and words as they are."""
    text = pasted_in_words(text)
    text = text.replace(META_EVAL_LEAVES_COPIES, " (the Correlation page leaves such rows out, as meta-eval does)")
    return _METRIC_IDS.sub(lambda m: DISPLAY[m.group(1)], text)
