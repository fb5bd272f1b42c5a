"""The shareable report: one self-contained HTML file that opens offline (``dialeval report``, the dashboard's
download button).

Everything is inline: the style, a few lines of script (filter the per-example table) and the charts, which
are drawn here as SVG (plotly's script alone is 4.8 MB; these charts need a few kilobytes). No URL is
fetched. It renders the one verdict (``core.verdict.Verdict``): the one-line verdict, the headline table with
intervals, the judge with its length-controlled win rate, what drives each difference, the slices by reply
length, the per-example table with both replies side by side and each metric's winner (matched n-grams
marked), υBLEU's references, every signature, the input files' SHA-256 and the version. All user text is
HTML-escaped.
"""
from __future__ import annotations

import hashlib
import html
import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from core.data import Comparison, alignment_words, dimensions
from core.formatting import alpha_label, fmt_interval, fmt_num, level_label
from core.report import as_sentence, left_out_note, no_winner_notes, unmatched_words
from core.scoring import metric_class
from core.verdict import Verdict, mismatch_warning, pair_winner, verdict_glance, verdict_notes, verdict_parts
from core.version import __version__

if TYPE_CHECKING:
    from core.engine import ComparisonScores

UNMATCHED_LISTED = 500  # unmatched rows named in the report; the count is always complete
COLOUR = {"A": "#1f77b4", "B": "#d95f02", None: "#7f7f7f", "tie": "#7f7f7f"}
# bidirectional controls (embeddings, overrides, isolates, marks): one in a system's name reversed the rest of
# the verdict banner, the tables and the chart legend, so the report shows them as their code points
BIDI_CONTROLS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def escape_text(text: str) -> str:
    """``text`` as inert HTML: escaped, and bidirectional control characters shown as ``[U+202E]``."""
    return BIDI_CONTROLS.sub(lambda m: f"[U+{ord(m.group()):04X}]", html.escape(text))


@dataclass
class InputFile:
    """An input file as the report names it: its name, size and SHA-256 of its bytes."""

    name: str
    sha256: str
    size: int


def input_file(name: str, data: bytes | None = None) -> InputFile:
    """:class:`InputFile` of a path (read) or of uploaded bytes."""
    raw = Path(name).read_bytes() if data is None else data
    return InputFile(Path(name).name, hashlib.sha256(raw).hexdigest(), len(raw))


# ------------------------------------------------------------------------------------------------
# matched n-grams


_TOKEN = re.compile(r"\w+|[^\w\s]")


def matched_ngrams(text: str, references: Sequence[str], max_order: int = 2) -> list[tuple[str, int]]:
    """``text`` cut into pieces with a match level each: 2 when the token is part of an n-gram (2 <= n <=
    ``max_order``) that occurs in a reference, 1 when only the token itself occurs, 0 otherwise (spaces between
    tokens are pieces of level 0). Tokens are words and punctuation marks, case kept (as BLEU's ``lc:0``)."""
    toks = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(text)]
    ref_tokens = [[m.group() for m in _TOKEN.finditer(r)] for r in references]
    grams: set[tuple[str, ...]] = set()
    for rt in ref_tokens:
        for n in range(1, max_order + 1):
            grams |= {tuple(rt[i:i + n]) for i in range(len(rt) - n + 1)}
    level = [0] * len(toks)
    words = [t for _, _, t in toks]
    for i, w in enumerate(words):
        if (w,) in grams:
            level[i] = 1
    for n in range(2, max_order + 1):
        for i in range(len(words) - n + 1):
            if tuple(words[i:i + n]) in grams:
                for k in range(i, i + n):
                    level[k] = 2
    out, pos = [], 0
    for (s, e, _), lv in zip(toks, level):
        if s > pos:
            out.append((text[pos:s], 0))
        out.append((text[s:e], lv))
        pos = e
    if pos < len(text):
        out.append((text[pos:], 0))
    return out


MARK_STYLE = {1: "background:#fff3b0", 2: "background:#ffd54f"}


def highlight_html(text: str, references: Sequence[str], inline_style: bool = False) -> str:
    """``text`` as escaped HTML with reference n-grams marked: ``<mark class="m2">`` for a matched bigram,
    ``<mark class="m1">`` for a matched word (``inline_style``: the colours as style attributes instead). A
    punctuation mark matched only as a word of its own is left unmarked: BLEU counts it, but the ' of "I'm"
    marked alone (the reference had "that's") read as a fault of the highlighting."""
    if not references:
        return escape_text(text)
    attr = (lambda lv: f'style="{MARK_STYLE[lv]}"') if inline_style else (lambda lv: f'class="m{lv}"')  # noqa: E731
    pieces = [(piece, 0 if lv == 1 and not any(ch.isalnum() for ch in piece) else lv)
              for piece, lv in matched_ngrams(text, references)]
    return "".join(escape_text(piece) if lv == 0 else f"<mark {attr(lv)}>{escape_text(piece)}</mark>"
                   for piece, lv in pieces)


# ------------------------------------------------------------------------------------------------
# charts (inline SVG)


def _svg_text(x: float, y: float, text: str, anchor: str = "start", size: int = 12, colour: str = "#222",
              weight: str = "normal") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{colour}" '
            f'font-weight="{weight}">{escape_text(text)}</text>')


def forest_svg(rows, system_a: str, system_b: str, width: int = 720, level: float = 0.95) -> str:
    """A - B with its interval, one line per row (each on its own scale: metrics differ in range), the dashed
    line at 0; coloured by the winner."""
    rh, top, left, right = 34, 30, 170, 190  # right: room for "+11.408 [+6.085, +16.540]" at 11 px
    plot_w = width - left - right
    b_label, a_label = f"← {system_b} higher", f"{system_a} higher →"
    # the two direction labels share one line while they fit (about 6.5 px a character at 11 px); longer names
    # (e.g. "meta-llama/Llama-3.1-8B-Instruct") printed on top of each other, so then A's goes on a second line
    two_lines = 6.5 * (len(b_label) + len(a_label)) > plot_w - 12
    top += 14 if two_lines else 0
    h = top + rh * len(rows) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {h}" width="100%" '
           f'style="max-width:{width}px;min-width:{width * 3 // 4}px" role="img" '
           f'aria-label="A - B per metric with {level_label(level)} interval">',
           _svg_text(left, 16, b_label, "start", 11, COLOUR["B"]),
           _svg_text(width - 8 if two_lines else left + plot_w, 30 if two_lines else 16, a_label, "end", 11,
                     COLOUR["A"])]
    for k, r in enumerate(rows):
        y = top + rh * k + rh / 2
        ends = [v for v in (r.low, r.high, r.diff) if math.isfinite(v)]  # no interval with too few contexts
        lo, hi = min(ends + [0.0]), max(ends + [0.0])
        if hi <= lo:
            lo, hi = -1.0, 1.0
        pad = 0.08 * (hi - lo)
        lo, hi = lo - pad, hi + pad
        sx = lambda v: left + plot_w * (v - lo) / (hi - lo)  # noqa: E731
        c = COLOUR[r.winner]
        out.append(_svg_text(left - 8, y + 4, r.metric, "end"))
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<line x1="{sx(0):.1f}" x2="{sx(0):.1f}" y1="{y - 12:.1f}" y2="{y + 12:.1f}" stroke="#999" '
                   'stroke-dasharray="3,3"/>')
        if math.isfinite(r.diff):
            if math.isfinite(r.low) and math.isfinite(r.high):
                out.append(f'<line x1="{sx(r.low):.1f}" x2="{sx(r.high):.1f}" y1="{y:.1f}" y2="{y:.1f}" '
                           f'stroke="{c}" stroke-width="3"/>')
            out.append(f'<circle cx="{sx(r.diff):.1f}" cy="{y:.1f}" r="5" fill="{c}"/>')
        out.append(_svg_text(left + plot_w + 8, y + 4, fmt_interval(r.diff, r.low, r.high, signed=True), "start", 11))
    out.append("</svg>")
    return "".join(out)


def histogram_svg(values: Sequence[float], title: str, lo: float | None = None, hi: float | None = None,
                  bins: int = 20, width: int = 340, zero_line: bool = True) -> str:
    """A small histogram of ``values`` (NaN left out) with the title above it."""
    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], dtype=np.float64)
    h, top, bottom, pad = 150, 22, 20, 8
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {h}" width="{width}" role="img" '
           f'aria-label="{escape_text(title)}">', _svg_text(pad, 14, title, "start", 12, weight="bold")]
    if len(v):
        lo = float(v.min()) if lo is None else lo
        hi = float(v.max()) if hi is None else hi
        if hi <= lo:
            lo, hi = lo - 0.5, hi + 0.5
        counts, edges = np.histogram(v, bins=bins, range=(lo, hi))
        pw, ph = width - 2 * pad, h - top - bottom
        bw = pw / bins
        for k, c in enumerate(counts):
            bh = ph * c / max(counts.max(), 1)
            out.append(f'<rect x="{pad + k * bw:.1f}" y="{top + ph - bh:.1f}" width="{max(bw - 1, 1):.1f}" '
                       f'height="{bh:.1f}" fill="#6a8caf"/>')
        if zero_line and lo < 0 < hi:
            x0 = pad + pw * (0 - lo) / (hi - lo)
            out.append(f'<line x1="{x0:.1f}" x2="{x0:.1f}" y1="{top}" y2="{top + ph}" stroke="#333" '
                       'stroke-dasharray="3,3"/>')
        out.append(_svg_text(pad, h - 4, f"{lo:.3g}", "start", 10))
        out.append(_svg_text(width - pad, h - 4, f"{hi:.3g}", "end", 10))
        out.append(_svg_text(width / 2, h - 4, f"n = {len(v)}", "middle", 10, "#555"))
    else:
        out.append(_svg_text(pad, 60, "no values", "start", 11, "#555"))
    out.append("</svg>")
    return "".join(out)


# ------------------------------------------------------------------------------------------------
# the page


STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1200px;padding:16px;
color:#222;line-height:1.45}
h1{font-size:1.5em;margin:.2em 0;overflow-wrap:anywhere} h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd;overflow-wrap:anywhere}
p{overflow-wrap:anywhere}
.verdict{font-size:1.05em;background:#f3f7fb;border-left:6px solid #1f77b4;padding:12px 16px;
overflow-wrap:anywhere;white-space:normal}
.glance{font-size:1.1em;margin:.25em 0} .facts{color:#555;font-size:.9em;overflow-wrap:anywhere} table{border-collapse:collapse;margin:.5em 0;font-size:.88em}
th,td{border:1px solid #ddd;padding:4px 6px;vertical-align:top;text-align:left;overflow-wrap:break-word} th{background:#f6f6f6}
td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
.wide{overflow-x:auto} .A{color:#1f77b4;font-weight:600} .B{color:#d95f02;font-weight:600} .tie{color:#777}
mark.m1{background:#fff3b0} mark.m2{background:#ffd54f} .ctx{color:#444;font-size:.95em;min-width:12em;max-width:24em} .turn{display:block}
.reply{min-width:14em;max-width:26em;overflow-wrap:anywhere;white-space:pre-line} .pos{background:#e3f4e8} .neg{background:#fbe3e3}
.charts{display:flex;flex-wrap:wrap;gap:12px} details{margin:.2em 0} li{overflow-wrap:anywhere}
code{font-size:.85em;overflow-wrap:anywhere}
#filter{padding:4px 8px;width:24em;max-width:100%}
"""

SCRIPT = """
(function(){var box=document.getElementById('filter');if(!box)return;var rows=document.querySelectorAll(
'#examples tbody tr');var shown=document.getElementById('shown');box.addEventListener('input',function(){
var q=box.value.toLowerCase(),n=0;rows.forEach(function(r){var ok=!q||r.textContent.toLowerCase().indexOf(q)>=0;
r.style.display=ok?'':'none';if(ok)n++;});shown.textContent=n;});})();
"""


def _e(x) -> str:
    return escape_text(str(x))


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], attrs: str = "") -> str:
    """``rows`` of already escaped HTML cells."""
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in r) + "</tr>"
                   for r in rows)
    return f'<div class="wide"><table {attrs}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _num_cell(x, **kw) -> str:
    return f'<td class="num">{_e(fmt_num(x, **kw))}</td>'


def _ci(m, lo, hi, signed: bool = False) -> str:
    return f'<td class="num">{_e(fmt_interval(m, lo, hi, signed=signed))}</td>'


def _winner_cell(w: str | None) -> str:
    if w in ("A", "B"):
        return f'<td class="{w}">{w}</td>'
    return f'<td class="tie">{"tie" if w == "tie" else "-"}</td>'


def render_html(verdict: Verdict, comp: Comparison, cs: "ComparisonScores | None" = None,
                inputs: Sequence[InputFile] = (), command: str | None = None, title: str | None = None) -> str:
    """The whole report as one HTML string (see the module docstring for what it holds)."""
    from core.slices import slice_comparison
    v = verdict
    ci = f"{level_label(v.level)} CI"
    A, B = v.system_a, v.system_b
    names = {"A": A, "B": B}
    head, rest = verdict_parts(v)  # the one-line verdict (v.sentence), its headline in bold
    parts = [f"<h1>{_e(title or f'dialeval report: {A} (A) vs {B} (B)')}</h1>",
             *(f'<p class="glance"><b>{_e(label)}:</b> {_e(text)}</p>' for label, text in verdict_glance(v)),
             f'<p class="verdict" id="verdict"><b>{_e(head)}</b>{_e(rest)}</p>',
             f'<p class="facts">A = {_e(A)}, B = {_e(B)}; {v.n_pairs} pair{"s" * (v.n_pairs != 1)} aligned by '
             f'{_e(alignment_words(v.aligned_by, v.alignment_note))}'
             + (f" (<b>{_e(unmatched_words(v))}</b>)" if v.unmatched else "") + "; intervals "
             f"and p-values resample {_e(v.resampled)} ({v.n_boot:,} bootstrap resamples, {v.n_perm:,} "
             f"randomizations, seed {v.seed}, {level_label(v.level)}); a winner only when p &lt; {alpha_label(v.level)} and the "
             f"interval of A - B excludes 0. dialeval {_e(__version__)}, made "
             f"{datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}.</p>"]
    notes = dict(v.input_notes)
    for anchor, note in {**verdict_notes(v), "reference-copies": notes.pop("reference copy", "")}.items():
        if note:
            parts.append(f'<p class="facts" id="{anchor}"><b>{_e(as_sentence(note))}</b></p>')
    if notes:
        parts.append('<p class="facts" id="input-notes">Notes on the input:</p><ul>'
                     + "".join(f"<li>{_e(as_sentence(n))}</li>" for n in notes.values()) + "</ul>")
    if v.context_mismatches:
        more = len(v.context_mismatches) - UNMATCHED_LISTED
        parts += [f'<p class="facts" id="context-mismatch"><b>{_e(mismatch_warning(v))}:</b></p><ul>'
                  + "".join(f"<li>{_e(m)}</li>" for m in v.context_mismatches[:UNMATCHED_LISTED])
                  + (f"<li>and {more} more</li>" if more > 0 else "") + "</ul>"]
    if v.metrics:
        rows = []
        for r in v.table_rows():
            w = r.winner
            margin = "; ".join(no_winner_notes(r, v.level)) or "-"
            if w == "A":
                margin = f"{A}: {fmt_interval(r.diff, r.low, r.high, signed=True)}"
            elif w == "B":
                margin = f"{B}: {fmt_interval(-r.diff, -r.high, -r.low, signed=True)}"
            rows.append([_e(r.metric), f'<td class="{w or "tie"}">{_e(r.better(A, B))}</td>', _e(margin),
                         _ci(r.mean_a, r.mean_a_low, r.mean_a_high), _ci(r.mean_b, r.mean_b_low, r.mean_b_high),
                         _ci(r.diff, r.low, r.high, True), _num_cell(r.p_randomization, p=True),
                         f'<td class="num">{r.wins}/{r.ties}/{r.losses}</td>', str(r.n)])
        parts += ["<h2>Headline</h2>",
                  _table(["metric", "better", f"by how much (better - other) [{ci}]", f"mean A [{ci}]",
                          f"mean B [{ci}]", f"A - B [{ci}]", "p", "A wins/ties/B wins", "n"], rows, 'id="headline"'),
                  "<p>Each metric on its own scale; the dashed line is no difference.</p>",
                  f'<div class="wide">{forest_svg(v.metrics, A, B, level=v.level)}</div>']  # scrolls on a phone
    j = v.judge
    if j is not None:
        from core.report import judge_lines
        parts += ["<h2>The A/B judge</h2>", "<ul>" + "".join(f"<li>{_e(x[len('judge: '):])}</li>"
                                                            for x in judge_lines(v)) + "</ul>",
                  '<div class="charts">' + histogram_svg(j.p_a, "P(A preferred) per pair", 0.0, 1.0, 20,
                                                         zero_line=False) + "</div>"]
    if v.drivers:
        rows = []
        for d in v.drivers:
            top = ", ".join(f"{t['id']} ({fmt_num(t['diff'], signed=True)})" for t in d.top)
            toward = _e(names[d.direction]) if d.top else "neither (every pair ties)" if d.n_pairs else "-"
            rows.append([_e(d.metric), toward, _e(top), f"{d.n_left_out} of {d.n_pairs}",
                         _ci(d.diff_without, d.low_without, d.high_without, True), _num_cell(d.p_without, p=True),
                         _e(d.survival)])
        parts += ["<h2>What drives each difference</h2>",
                  "<p>The pairs whose A - B pushes the mean furthest in its direction, and the comparison redone "
                  "without the most pushing 5 % of the pairs (at least one; only pairs that push that way): does the "
                  "metric's verdict survive?</p>",
                  _table(["metric", "pushes toward", "top pairs (A - B)", "left out", f"A - B without them [{ci}]",
                          "p", "verdict survives"], rows)]
    if cs is not None and cs.metrics:
        rows = []
        for m in cs.metrics:
            for r in slice_comparison(cs, m, "reply length", n_boot=v.n_boot, n_perm=v.n_perm, level=v.level,
                                      seed=v.seed):
                rows.append([_e(m), _e(r.metric), str(r.n), _ci(r.diff, r.low, r.high, True),
                             _num_cell(r.p_randomization, p=True),
                             f'<td class="{r.winner or "tie"}">{_e(r.better(A, B))}</td>'])
        parts += ["<h2>By reply length</h2>", "<p>Pairs cut into up to three groups of about equal size by the mean "
                  "length of their two replies (pairs of equal length stay in one group, so on few or alike "
                  "replies the groups are uneven or fewer); each group compared as the whole is.</p>",
                  _table(["metric", "reply length", "pairs", f"A - B [{ci}]", "p", "better"], rows),
                  "<h2>Per-example differences</h2>",
                  '<div class="charts">' + "".join(histogram_svg(np.asarray(cs.a(m)) - np.asarray(cs.b(m)),
                                                                 f"{m}: A - B per pair") for m in cs.metrics)
                  + "</div>"]
    parts += _examples_section(v, comp, cs)
    parts += _references_section(comp, cs)
    sig_rows = [[_e(m), f"<code>{_e(s)}</code>"] for m, s in (cs.table.signatures().items() if cs is not None else [])]
    if j is not None:
        sig_rows.append(["judge", f"<code>{_e(j.signature)}</code>"])
    parts += ["<h2>Signatures</h2>", _table(["metric", "signature"], sig_rows)]
    if inputs:
        rows = [[_e(f.name), f'<td class="num">{f.size:,}</td>', f"<code>{f.sha256}</code>"] for f in inputs]
        parts += ["<h2>Inputs</h2>", _table(["file", "bytes", "SHA-256"], rows, 'id="inputs"')]
    if v.left_out:
        parts += ["<h2>Pairs left out of a row's n (no value for A or B)</h2>",
                  '<ul id="left-out">' + "".join(f"<li>{_e(d['metric'])}: {_e(left_out_note(d))}</li>"
                                                 for d in v.left_out) + "</ul>"]
    if v.unmatched:
        more = len(v.unmatched) - UNMATCHED_LISTED
        parts += [f"<h2>{len(v.unmatched)} unmatched row(s), not compared</h2>",
                  '<ul id="unmatched">' + "".join(f"<li>{_e(u)}</li>" for u in v.unmatched[:UNMATCHED_LISTED])
                  + (f"<li>and {more} more</li>" if more > 0 else "") + "</ul>"]
    foot = f"dialeval {_e(__version__)}" + (f" &middot; <code>{_e(command)}</code>" if command else "")
    parts.append(f'<p class="facts">{foot}</p>')
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_e(f'dialeval: {A} vs {B}')}</title><style>{STYLE}</style></head><body>\n"
            + "\n".join(parts) + f"\n<script>{SCRIPT}</script></body></html>\n")


def _examples_section(v: Verdict, comp: Comparison, cs: "ComparisonScores | None") -> list[str]:
    metrics = cs.metrics if cs is not None else []
    dims = dimensions(comp.examples())
    j = v.judge
    heads = ["#", "id", "context", f"A: {v.system_a}", f"B: {v.system_b}"]
    for m in metrics:
        heads += [f"{m} A", f"{m} B", f"{m} better"]
    if j is not None:
        heads += ["judge P(A)", "judge"]
    for d in dims:
        heads += [f"people {d} A", f"people {d} B"]
    rows = []
    for i, (a, b) in enumerate(comp.pairs):
        refs = a.references or b.references
        ctx = "".join(f'<span class="turn">{_e(t)}</span>' for t in a.context)
        cells = [str(i + 1), _e(a.id), f'<td class="ctx">{ctx}</td>',
                 f'<td class="reply">{highlight_html(a.response, refs)}</td>',
                 f'<td class="reply">{highlight_html(b.response, refs)}</td>']
        for m in metrics:
            x, y = float(cs.a(m)[i]), float(cs.b(m)[i])
            cells += [_num_cell(x), _num_cell(y), _winner_cell(pair_winner(x, y, metric_class(m).higher_is_better))]
        if j is not None:
            cells += [_num_cell(j.p_a[i]), _winner_cell(j.verdicts[i])]
        for d in dims:
            cells += [_num_cell(a.scores.get(d)), _num_cell(b.scores.get(d))]
        rows.append(cells)
    return ["<h2>Every pair</h2>",
            f'<p>Both replies side by side; words that also occur in the reference are marked '
            f'(<mark class="m2">in a shared bigram</mark>, <mark class="m1">word only</mark>). '
            f'<input id="filter" type="search" placeholder="filter: text in any cell" aria-label="filter"> '
            f'<span id="shown">{len(comp.pairs)}</span> of {len(comp.pairs)} pairs shown.</p>',
            _table(heads, rows, 'id="examples"')]


def _references_section(comp: Comparison, cs: "ComparisonScores | None") -> list[str]:
    if cs is None or "ubleu" not in cs.metrics:
        return []
    out = ["<h2>υBLEU's references</h2>",
           "<p>Per pair: the references υBLEU used (the original, the retrieved ones with the utterance they answered "
           "and its similarity) and the rater's weight (green &gt; 0, red &lt; 0).</p>"]
    for i, (a, _) in enumerate(comp.pairs):
        det = cs.table.details("ubleu", i) or cs.table.details("ubleu", cs.n + i)
        refs = (det or {}).get("references", [])
        if not refs:
            continue
        rows = []
        for r in refs:
            w = r.get("weight")
            cls = "pos" if w is not None and w > 0 else "neg" if w is not None and w < 0 else ""
            rows.append([_e(r.get("kind", "")), f'<td class="num {cls}">{_e(fmt_num(w, signed=True))}</td>',
                         _e(r.get("text", "")), _e(r.get("source_utterance") or ""), _num_cell(r.get("similarity"))])
        out.append(f"<details><summary>{i + 1}. {_e(a.id)}: {len(refs)} references</summary>"
                   + _table(["kind", "weight", "reference", "source utterance", "similarity"], rows) + "</details>")
    return out
