"""``dialeval report A [B] --out report.html``: the verdict as one self-contained HTML file to share
(``core.html_report``): opens offline, everything inline."""
from __future__ import annotations

import argparse

from core.cli import note, register_command, tell, write_stdout
from core.cli.compare import add_verdict_arguments, verdict_from
from core.html_report import input_file, render_html
from core.outputs import write_text


def _arguments(p: argparse.ArgumentParser) -> None:
    add_verdict_arguments(p)
    p.add_argument("-o", "--out", required=True, help="the HTML file to write (e.g. report.html; written whole or not at "
                                                "all; - writes the page to stdout and the verdict to stderr)")
    p.add_argument("--title", default=None, help="the report's heading (default: 'dialeval report: A vs B')")


@register_command("report", "one self-contained HTML report of the verdict (opens offline; to share)", _arguments)
def report(a: argparse.Namespace) -> int:
    out = a.out if a.out != "-" else None
    if out is not None and not out.lower().endswith((".html", ".htm")):  # said before anything runs
        note([f"--out {out}: the report is an HTML page whatever the file's name (open it in a browser; to print "
              "it to PDF, use the browser's print)"])
    comp, cs, verdict = verdict_from(a, out)
    inputs = [input_file(p) for p in (a.input, a.input_b) if p]
    page = render_html(verdict, comp, cs, inputs, command=a.command_line, title=a.title)
    if out is None:  # the page on stdout (to pipe it), everything else on stderr
        write_stdout(page)
        tell(verdict.sentence)
        return 0
    write_text(out, page)
    write_stdout(verdict.sentence + "\n")
    tell(f"wrote {out} ({len(page.encode('utf-8')):,} bytes)", routine=True)
    return 0
