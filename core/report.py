"""Rendering shared by every surface: tables (text, markdown, CSV, JSON) and the verdict
(``core.verdict.Verdict``) as ``dialeval compare`` and ``judge`` print it."""
from __future__ import annotations

import csv
import io
import json
import math
import re
import unicodedata
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Sequence


from core.data import alignment_words
from core.formatting import (alpha_label, clean_json, counted, fmt_bounds, fmt_interval, fmt_num, level_label,
                             plain_float, undecided_interval_words)
from core.outputs import atomic_open
from core.stats import MIN_RESAMPLED
from core.verdict import (LEFT_OUT_LISTED, mismatch_warning, verdict_glance, verdict_notes, verdict_parts,
                          verdict_with_glance)

if TYPE_CHECKING:
    from core.data import Comparison
    from core.verdict import Verdict


def to_json(obj: Any) -> str:
    return json.dumps(clean_json(obj), indent=2, ensure_ascii=False)


def display_width(text: str) -> int:
    """Columns ``text`` takes in a terminal: wide East Asian characters and emoji count two, combining marks and
    zero-width characters none (so text tables stay aligned with CJK or emoji system names)."""
    width = 0
    for ch in text:
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


_HTML_START = re.compile(r"<(?=[A-Za-z/!?])")  # what can open a raw HTML tag, comment or autolink (CommonMark)
_ENTITY = re.compile(r"&(?=#[0-9]{1,7};|#[xX][0-9a-fA-F]{1,6};|[A-Za-z][A-Za-z0-9]*;)")  # an entity reference


def markdown_text(text: str) -> str:
    """User text (a system name, a reply) made inert in Markdown: a ``<`` that could open HTML (``<b>``, ``</``,
    ``<!--``, ``<http:...>``) and an ``&`` that would start an entity (``&amp;``, ``&#60;``) are written as entities,
    so a name such as ``<b>GT</b>`` is shown as written; ``*`` and backticks are escaped (no emphasis or code from a
    name). Any other ``<`` and ``&`` cannot be read as markup and stay as typed (``p <0.001``, ``Q&A`` read the same
    in the raw file). ``>`` stays: it only quotes at the start of a line, where these outputs put their own words."""
    text = _HTML_START.sub("&lt;", _ENTITY.sub("&amp;", text))
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("`", "\\`")


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(cell: Any) -> Any:
    """A CSV cell a spreadsheet will not run: text that starts like a formula (``=``, ``+``, ``-``, ``@``, tab,
    carriage return; a system named ``=HYPERLINK(...)``) gets a leading ``'``, as OWASP advises; numbers, signed
    numbers written as text and a lone ``-`` stay as they are."""
    if not isinstance(cell, str) or not cell.startswith(FORMULA_STARTS) or cell == "-":
        return cell
    try:
        float(cell)
        return cell
    except ValueError:
        return "'" + cell


def render(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]], fmt: str = "text") -> str:
    """``rows`` of already formatted cells; ``columns`` = [(key, header)]; fmt text | markdown | csv (cells
    :func:`spreadsheet_safe`)."""
    heads = [h for _, h in columns]
    cells = [["" if r.get(k) is None else (fmt_num(r[k]) if isinstance(r[k], float) else str(r[k]))
              for k, _ in columns] for r in rows]
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([k for k, _ in columns])
        for r in rows:
            w.writerow(["" if r.get(k) is None or (isinstance(r.get(k), float) and math.isnan(r[k]))
                        else plain_float(r[k]) if isinstance(r[k], float) else spreadsheet_safe(r[k])
                        for k, _ in columns])
        return buf.getvalue().rstrip("\n")
    if fmt == "markdown":
        def cell(text: str) -> str:  # user text stays inert and in its column (headers name dimensions too)
            return markdown_text(text).replace("|", "\\|").replace("\n", "<br>")
        out = ["| " + " | ".join(cell(h) for h in heads) + " |", "|" + "|".join("---" for _ in heads) + "|"]
        out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in cells]
        return "\n".join(out)
    if fmt == "text":
        widths = [max([display_width(h)] + [display_width(row[i]) for row in cells]) for i, h in enumerate(heads)]
        def line(vals: Sequence[str]) -> str:
            return "  ".join(v + " " * (w - display_width(v)) for v, w in zip(vals, widths)).rstrip()
        return "\n".join([line(heads), line(["-" * w for w in widths])] + [line(row) for row in cells])
    raise ValueError(f"unknown format {fmt!r}; choose text, markdown, csv or json")


# ------------------------------------------------------------------------------------------------
# the verdict (core.verdict.Verdict) in every format

def verdict_columns(level: float = 0.95) -> list[tuple[str, str]]:
    """The (key, header) columns of the verdict table; the interval's header names its level."""
    return [("metric", "metric"), ("n", "n"), ("mean_a", "mean A"), ("mean_b", "mean B"), ("diff", "A-B"),
            ("interval", f"{level_label(level)} CI"), ("p_randomization", "p (rand)"), ("p_bootstrap", "p (boot)"),
            ("wtl", "win/tie/loss"), ("win", "A win rate [CI]"), ("sign_p", "p (sign)"), ("verdict", "verdict")]


def verdict_cells(v: "Verdict") -> list[dict[str, str]]:
    """The verdict's metric and human rows as formatted table cells (:func:`verdict_columns`)."""
    cells = []
    for r in v.table_rows():
        cells.append({"metric": r.metric, "n": str(r.n), "mean_a": fmt_num(r.mean_a), "mean_b": fmt_num(r.mean_b),
                      "diff": fmt_num(r.diff, signed=True),
                      "interval": fmt_bounds(r.low, r.high, signed=True),
                      "p_randomization": fmt_num(r.p_randomization, p=True),
                      "p_bootstrap": fmt_num(r.p_bootstrap, p=True), "wtl": f"{r.wins}/{r.ties}/{r.losses}",
                      "win": fmt_interval(r.win_rate, r.win_low, r.win_high)
                      if r.wins + r.losses else "-",  # no decided pair: no rate, no interval, no test
                      "sign_p": fmt_num(r.sign_p, p=True) if r.wins + r.losses else "-",
                      "verdict": r.verdict(v.system_a, v.system_b) + "".join(
                          f" ({why})" for why in no_winner_notes(r, v.level))})
    return cells


def no_winner_notes(r, level: float) -> list[str]:
    """What a row without a winner adds in every table (text, the report, the dashboard): the difference that
    could go unseen (:func:`could_miss`) and, when its interval excludes 0, which p decides
    (:func:`which_p_decides`)."""
    return [why for why in (could_miss(r), which_p_decides(r, level)) if why]


def which_p_decides(r, level: float) -> str:
    """'randomization p 0.071 >= 0.05: a winner needs both' for a row with no winner whose interval excludes 0
    (its bootstrap p may be below the threshold too): the table otherwise reads as contradicting itself."""
    if r.winner is not None or not r.n:
        return ""
    return undecided_interval_words(r.low, r.high, r.p_randomization, "randomization p", level)


def could_miss(r) -> str:
    """'< 0.09 could go unseen' for a verdict row with no winner: the smallest difference its contexts detect
    with 80 % power (``MetricComparison.detectable``); '' for a row with a winner or without an interval."""
    d = getattr(r, "detectable", math.nan)
    if r.winner is not None or not r.n or d is None or not math.isfinite(d):
        return ""
    return f"< {fmt_num(d)} could go unseen"


def _judge_could_miss(v: "Verdict") -> str:
    """' (a win rate within 0.13 of 0.5 could go unseen)' when the judge names no winner (80 % power)."""
    j = v.judge
    d = j.detectable(v.level) if j.winner is None else math.nan
    return f" (a win rate within {fmt_num(d)} of 0.5 could go unseen)" if math.isfinite(d) else ""


def judge_lines(v: "Verdict") -> list[str]:
    """The judge's summary in words (text and markdown)."""
    j = v.judge
    if j is None:
        return []
    w = j.win
    read = (f"{w.wins + w.ties + w.losses} pairs it read ({len(j.unparsed)} of the {j.n} unparsed)" if j.unparsed
            else f"{j.n} pairs")
    lines = [f"judge: prefers A in {w.wins}, B in {w.losses}, tie in {w.ties} of {read}; win rate of A "
             f"{fmt_num(w.rate)} (ties excluded; {level_label(v.level)} {w.interval} {fmt_bounds(w.low, w.high)}, "
             f"sign test p {fmt_num(w.sign_p, p=True)}; ties counted half: {fmt_num(w.ties_split)}) -> "
             f"{j.better(v.system_a, v.system_b)}{_judge_could_miss(v)}",
             f"judge: orders A|B and B|A disagreed on {fmt_num(j.order_disagreement)} of the pairs before combining "
             f"(position flips; identical replies{' and unparsed pairs' if j.unparsed else ''} left "
             "out); the reply shown first was preferred in "
             f"{fmt_num(j.first_shown)} of single-order calls; tie margin {j.tie_margin:g}; {j.signature}"]
    unparsed = j.unparsed
    if unparsed:
        lines.append(f"judge: {counted(len(unparsed), 'pair')} with an answer that named neither reply in one order "
                     "or both, after a second ask (unparsed, never guessed: P(A) 0.5, deciding nothing; asked again "
                     f"on the next run): pairs {', '.join(str(i + 1) for i in unparsed[:20])}"
                     f"{' ...' if len(unparsed) > 20 else ''} (numbered from 1; the JSON's judge.notes.unparsed "
                     "from 0)")
    lc = j.length_controlled
    if lc is not None and lc.n and not math.isfinite(lc.rate):
        why = lc.why_none or f"its decided pairs come from fewer than {MIN_RESAMPLED} contexts"
        lines.append(f"judge: no length-controlled win rate: {why}" + (
            f" (of the {lc.n} decided pairs without a blank reply; the {j.blank_left_out} with one left out: silence "
            "has no length)" if j.blank_left_out else ""))
    elif lc is not None and lc.n:
        lines.append(f"judge: length-controlled win rate of A {fmt_num(lc.rate)} ({level_label(v.level)} "
                     f"{fmt_bounds(lc.low, lc.high)}): its calls regressed on the length difference A - B (mean "
                     f"{lc.mean_length_diff:+.1f} words), read at equal length; plain {fmt_num(lc.raw)} on the same "
                     f"{lc.n} decided pairs" + (f" (the {j.blank_left_out} with a blank reply left out: silence has "
                                                 "no length)" if j.blank_left_out else ""))
        if j.length_check_words():
            lines.append(f"judge: {j.length_check_words()}")
    h = j.human
    if h is not None:
        if h.n:
            what = (f"human {h.dimension} (tie margin {h.margin:g})" if h.source == "scores" else "the votes")
            which = "with a clear human preference" if h.source == "scores" else "voted A or B"
            lines.append(f"judge: agreement with {what}: {fmt_num(h.agreement)} of the {h.n} pairs {which} "
                         f"({level_label(v.level)} Wilson {fmt_bounds(h.low, h.high)}; on the "
                         f"{h.n_decided} pairs the judge did not call a tie: {fmt_num(h.agreement_decided)})")
        else:
            lines.append(("judge: no pair with a clear human preference to measure agreement on"
                          if h.source == "scores" else "judge: no loaded pair voted A or B to measure agreement on")
                         + (" among the pairs it read" if j.unparsed else ""))
    return lines


def driver_lines(v: "Verdict") -> list[str]:
    """Per metric, what drives its difference (``core.verdict.Drivers``) in words."""
    lines = []
    for d in v.drivers:
        side = v.system_a if d.direction == "A" else v.system_b
        if not d.top:
            lines.append(f"{d.metric}: no pair pushes toward {side}" + (" (every pair ties)" if d.n_pairs else ""))
            continue
        ids = ", ".join(t["id"] for t in d.top)
        was = "no significant difference" if d.winner is None else f"{d.winner} better"
        now = "no significant difference" if d.winner_without is None else f"{d.winner_without} better"
        lines.append(f"{d.metric}: pairs pushing most toward {side}: {ids}; without the top {d.n_left_out} "
                     f"({d.n_left_out} of {d.n_pairs} pairs): A-B "
                     f"{fmt_interval(d.diff_without, d.low_without, d.high_without, signed=True)}, p {fmt_num(d.p_without, p=True)} -> {now} "
                     f"({_survival_words(d, was)})")
    return lines


def _survival_words(d: Any, was: str) -> str:
    if d.leaned:
        return (f"the lean (p below {d.lean:g}) survives" if d.survives else
                f"the lean (p below {d.lean:g}) does NOT survive")
    if d.winner is None:
        return "there was no verdict to survive"
    if not d.testable:
        return "too few contexts left to tell whether the verdict survives"
    return "the verdict survives" if d.survives else "the verdict does NOT survive: was " + was


PAIR_COLUMNS = [("id_a", "id A"), ("id_b", "id B"), ("p_a", "P(A)"), ("verdict", "judge"), ("human", "people"),
                ("context", "context"), ("response_a", "reply A"), ("response_b", "reply B")]


def unmatched_words(v: Verdict, listed: str = "listed below") -> str:
    """'not compared: 3 rows of base without a partner in cand (listed below)': the rows a side answered that the
    other did not, said beside the count of pairs (a candidate that skipped inputs is not hidden at the end);
    ``listed``: where they are listed."""
    said = [f"{k} row{'s' * (k != 1)} of {who} without a partner in {other}"
            for side, who, other in (("A", v.system_a, v.system_b), ("B", v.system_b, v.system_a))
            if (k := v.unmatched_by_side.get(side, 0))]
    return f"not compared: {', '.join(said) or f'{len(v.unmatched)} rows without a partner'} ({listed})"


def render_verdict(v: "Verdict", fmt: str = "text", with_sentence: bool = True,
                   pairs: Sequence[dict[str, Any]] = (), lead: str = "") -> str:
    """``dialeval compare``'s output: text / markdown (the one-line verdict first, then the table, the judge, what
    drives each difference, the pairs left out of a row's n, unmatched rows), csv (one table: a row for the
    one-line verdict, one each for its glance's evidence and track record, per metric, the judge, each row's left-out pairs, the unmatched rows and, from ``judge``,
    one row per judged pair (:func:`judge_rows`) and first a row of kind ``judge_sentence`` holding ``lead``, told
    apart by ``kind``) or json (the whole verdict)."""
    if fmt == "json":
        return to_json(v.to_dict())
    if fmt == "csv":
        rows: list[dict[str, Any]] = ([{"kind": "judge_sentence", "verdict": lead}] if lead else []) + [
            {"kind": "verdict", "verdict": v.sentence}] + [  # then the verdict at a glance, as text's next lines
            {"kind": label.lower().replace(" ", "_"), "verdict": text} for label, text in verdict_glance(v)[1:]]
        if v.alignment_note:  # (text says it in its header)
            rows.append({"kind": "note", "note": "aligned by " + alignment_words(v.aligned_by, v.alignment_note)})
        rows += [{"kind": "note", "note": note} for note in verdict_notes(v).values()]
        for r, d in zip(v.metrics, v.to_dict()["metrics"]):
            rows.append({"kind": r.kind, **{k: d[k] for k in d if k != "kind"}})
        if v.combined is not None:
            rows.append({**asdict(v.combined), "metric": "+".join(v.combined_signals),
                         "verdict": v.combined.verdict(v.system_a, v.system_b)})
        if v.judge is not None:
            j = v.judge
            w = j.win
            row = {"kind": "judge", "metric": "judge", "n": j.n, "wins": w.wins, "ties": w.ties,
                   "losses": w.losses, "win_rate": w.rate, "win_low": w.low, "win_high": w.high,
                   "win_rate_ties_split": w.ties_split, "sign_p": w.sign_p,
                   "verdict": j.better(v.system_a, v.system_b), "signature": j.signature,
                   "order_disagreement": j.order_disagreement, "first_shown": j.first_shown,
                   "unparsed_pairs": len(j.unparsed)}  # every number text and json give, as columns
            lc = j.length_controlled
            if lc is not None:
                row.update({"length_controlled_rate": lc.rate, "length_controlled_low": lc.low,
                            "length_controlled_high": lc.high, "length_controlled_note": lc.why_none or None,
                            "length_controlled_n": lc.n, "length_controlled_blank_left_out": j.blank_left_out})
            h = j.human
            if h is not None:
                row.update({"agreement_with": h.dimension if h.source == "scores" else "votes",
                            "agreement": h.agreement if h.n else None, "agreement_low": h.low if h.n else None,
                            "agreement_high": h.high if h.n else None, "agreement_n": h.n})
            rows.append(row)
        rows += [{"kind": "left_out", "metric": d["metric"], "n": d["n_left_out"], "note": left_out_note(d)}
                 for d in v.left_out]
        if v.unmatched:
            rows.append({"kind": "unmatched_total", "n": len(v.unmatched),
                         "note": f"{len(v.unmatched)} unmatched row(s), not compared"})
        rows += [{"kind": "unmatched", "note": u} for u in v.unmatched]
        if v.context_mismatches:
            rows.append({"kind": "context_mismatch_total", "n": len(v.context_mismatches), "note": mismatch_warning(v)})
        rows += [{"kind": "context_mismatch", "note": m} for m in v.context_mismatches]
        rows += [{"kind": "input_note", "about": about, "note": note} for about, note in v.input_notes.items()]
        rows += [{"kind": "pair", **r} for r in pairs]
        keys: list[str] = []
        for r in rows:
            keys += [k for k in r if k not in keys]
        return render(rows, [(k, k) for k in keys], "csv")
    head = (f"A = {v.system_a}, B = {v.system_b}: {v.n_pairs} pair{'s' * (v.n_pairs != 1)} aligned by "
            f"{alignment_words(v.aligned_by, v.alignment_note)}; intervals and "
            f"p-values resample {v.resampled} ({v.n_boot} bootstrap resamples, {v.n_perm} randomizations, "
            f"seed {v.seed})")
    if v.unmatched:  # a candidate that skipped inputs: said where the pairs are counted, not only at the end
        head += f"; {unmatched_words(v)}"
    if abs(v.level - 0.95) > 1e-12:
        head += (f"; {level_label(v.level)} intervals, so a metric or the judge names a winner when p < "
                 f"{alpha_label(v.level)} (not 0.05)")
    for note in verdict_notes(v).values():
        head += "; " + note
    inert = markdown_text if fmt == "markdown" else (lambda t: t)  # user text (names, ids) shown as written
    parts = [head]
    bullet = "- " if fmt == "markdown" else "  "
    if v.context_mismatches:
        shown = v.context_mismatches[:LEFT_OUT_LISTED]
        more = len(v.context_mismatches) - len(shown)
        parts.append(mismatch_warning(v) + ":\n" + "\n".join(bullet + m for m in shown)
                     + (f"\n{bullet}and {more} more" if more > 0 else ""))
    parts = [inert(p) for p in parts]
    if with_sentence:
        if fmt == "markdown":  # the headline in bold, the evidence after it plain; the glance's lines apart
            head, rest = verdict_parts(v)
            parts.insert(0, f"**{inert(head)}**{inert(rest)}" + "".join(f"\n\n**{k}:** {inert(t)}"
                                                                        for k, t in verdict_glance(v)[1:]))
        else:  # how strong and how far to trust it, a line each
            parts.insert(0, verdict_with_glance(v))
    if v.metrics or v.combined is not None:
        parts.append(render(verdict_cells(v), verdict_columns(v.level), fmt))  # render() makes its cells inert
    text_parts = ["\n".join(judge_lines(v))] if v.judge is not None else []
    if v.drivers:
        text_parts.append("What drives each difference:\n" + "\n".join(bullet + x for x in driver_lines(v)))
    if v.left_out:
        text_parts.append("pairs left out of a row's n (no value for A or B):\n"
                          + "\n".join(f"{bullet}{d['metric']}: {left_out_note(d)}" for d in v.left_out))
    if v.input_notes:
        text_parts.append("notes on the input:\n" + "\n".join(bullet + n for n in v.input_notes.values()))
    if v.unmatched:
        text_parts.append(f"{len(v.unmatched)} unmatched row(s), not compared:\n"
                          + "\n".join(bullet + u for u in v.unmatched))
    return "\n\n".join(p for p in parts + [inert(t) for t in text_parts] if p)


def as_sentence(note: str) -> str:
    """A note (lower-case start, no full stop, as headers join them with '; ') as a sentence of its own."""
    return note[:1].upper() + note[1:] + "."


def left_out_note(d: dict[str, Any]) -> str:
    """One verdict row's pairs without a value (``Verdict.left_out``) in words."""
    more = d["n_left_out"] - len(d["pairs"])
    reason = f"all: {d['reason']}, e.g. " if d.get("reason") else ""
    return (f"{d['n_left_out']} of {d['n_pairs']} pairs left out ({reason}{'; '.join(d['pairs'])}"
            + (f"; and {more} more" if more > 0 else "") + ")")


def judge_rows(v: "Verdict", comp: "Comparison") -> list[dict[str, Any]]:
    """One record per judged pair: ids, the whole context (its turns oldest first, one per line, as the inputs
    and the dashboard's CSV download write a context), both replies, P(A), the judge's call and, where known,
    people's; from a judge that lists pairs it could not read (the llm judge), ``unparsed`` too (so a tie it
    found is told from a pair it could not read)."""
    j = v.judge
    human = j.human.human if j is not None and j.human is not None else [None] * len(comp.pairs)
    unread = set(j.notes["unparsed"]) if "unparsed" in j.notes else None
    return [{"id_a": a.id, "id_b": b.id, "context": "\n".join(a.context), "response_a": a.response,
             "response_b": b.response,
             "p_a": p, "verdict": verdict, "human": h, **({} if unread is None else {"unparsed": i in unread})}
            for i, ((a, b), p, verdict, h) in enumerate(zip(comp.pairs, j.p_a, j.verdicts, human))]


def jsonl_line(record: dict[str, Any]) -> str:
    """One record as the line every JSONL output writes (no line end): NaN as null, UTF-8 text kept."""
    return json.dumps(clean_json(record), ensure_ascii=False)


def write_jsonl(records: Sequence[dict[str, Any]], path: str) -> None:
    """One JSON line per record, written atomically (``core.outputs``): all of it, or nothing changed."""
    with atomic_open(path) as f:
        for rec in records:
            f.write(jsonl_line(rec) + "\n")
