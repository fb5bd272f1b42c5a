"""How every surface writes a number for people: a table's number, an interval, a percentage, the interval's level
and the significance threshold. The command line's tables, the text, markdown, CSV and HTML reports, the
leaderboard, the verdict's sentence and the gate all write through these, so one number reads the same wherever
it is shown. A missing number (None, NaN) is ``-``; a missing interval (too few contexts to resample) is ``[-]``.
Machine-readable outputs (JSON, CSV cells of numbers) keep the numbers themselves (``core.report.clean_json``)."""
from __future__ import annotations

import math
import re
from typing import Any, Iterable

import numpy as np

MISSING = "-"


def _finite(x: Any) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


P_THRESHOLDS = (0.01, 0.05, 0.1, 0.2)  # the thresholds a p is read against (1 - level at 0.99, 0.95, 0.9, 0.8)


def fmt_num(x: Any, digits: int = 3, signed: bool = False, p: bool = False) -> str:
    """A number for a table: '-' for None/NaN; never '-0.000'; p-values below 0.001 as '<0.001', and with a fourth decimal where
    three would round one just below a threshold up to it (0.0498 read '0.050', and was significant at 0.05)."""
    if x is None:
        return MISSING
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(v):
        return MISSING
    if p:
        if v < 0.001:
            return "<0.001"
        for places in range(3, 7):  # as many decimals as keep it below the threshold it is below
            text = f"{v:.{places}f}"
            if not any(v < t <= float(text) for t in P_THRESHOLDS):
                return text
        return f"<{min(t for t in P_THRESHOLDS if v < t):g}"  # within 5e-7 below it: '<0.05', never '0.050000'

    if math.isfinite(v) and round(v, digits) == 0:
        v = 0.0  # never '-0.000' (a bound of an interval at a tie, or below the shown digits)
    return f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"


def fmt_p(x: Any) -> str:
    """A p-value in a sentence: 'p = 0.004', 'p < 0.001', 'p = -' without one."""
    text = fmt_num(x, p=True)
    return f"p < {text[1:]}" if text.startswith("<") else f"p = {text}"


def fmt_bounds(low: Any, high: Any, digits: int = 3, signed: bool = False) -> str:
    """``[low, high]`` as :func:`fmt_num` writes each end; ``[-]`` without an interval (too few contexts to
    resample)."""
    if not (_finite(low) and _finite(high)):
        return f"[{MISSING}]"
    return f"[{fmt_num(low, digits, signed)}, {fmt_num(high, digits, signed)}]"


def fmt_interval(x: Any, low: Any, high: Any, digits: int = 3, signed: bool = False) -> str:
    """``x [low, high]`` (``+0.102 [+0.051, +0.154]`` with ``signed``); ``x [-]`` without an interval; ``-``
    without ``x``."""
    if not _finite(x):
        return MISSING
    return f"{fmt_num(x, digits, signed)} {fmt_bounds(low, high, digits, signed)}"


def fmt_amount(x: Any, signed: bool = True) -> str:
    """A difference in a metric's own units with as many decimals as its size needs (3 significant digits, at
    most 3 decimals): ``+12.3``, ``+1.23``, ``+0.123``; '-' without a number."""
    if not _finite(x):
        return MISSING
    v = float(x)
    digits = 1 if abs(v) >= 10 else 2 if abs(v) >= 1 else 3
    if round(v, digits) == 0:
        v = 0.0  # never '-0.000' (a tie, or a difference below the shown digits)
    return f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"


def fmt_percent(x: float, of: float = 1) -> str:
    """A rate as a whole percentage: 0.384 -> ``38 %``; ``x`` of ``of`` (23 of 40 -> ``58 %``, computed as
    100 * 23 / 40, which is exact where 100 * (23 / 40) is not)."""
    return f"{100 * x / of:.0f} %"


def fmt_percent_bounds(low: float, high: float) -> str:
    """A rate's interval as whole percentages: ``[29–47 %]``."""
    return f"[{100 * low:.0f}–{100 * high:.0f} %]"


def fmt_points(x: float, signed: bool = False) -> str:
    """A difference of rates in percentage points: 0.05 -> ``5 points`` (``+5 points`` with ``signed``)."""
    return f"{100 * x:+.0f} points" if signed else f"{100 * x:.0f} points"


def counted(n: int, noun: str) -> str:
    """'1 pair', '2,000 pairs': a count with its noun, singular for one."""
    return f"{n:,} {noun}{'s' * (n != 1)}"


def fmt_list(words: Iterable[str]) -> str:
    """Words as a sentence lists them: ``a``, ``a and b``, ``a, b and c``; ``""`` for none."""
    words = list(words)
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words)


def level_label(level: float) -> str:
    """An interval level as people write it: 0.95 -> ``95%``, 0.8 -> ``80%``, 0.975 -> ``97.5%``."""
    return f"{level * 100:.10g}%"


def alpha_label(level: float) -> str:
    """The significance threshold that goes with an interval level: 0.95 -> ``0.05`` (3 significant digits)."""
    return f"{1 - level:.3g}"


SIGNIFICANT_DIGITS = 12  # digits a written float keeps: float64 rounding noise (100.00000000000004) goes


def plain_float(v: float) -> float:
    """``v`` with :data:`SIGNIFICANT_DIGITS` significant digits, as every JSON and CSV output writes it: a BLEU
    of exactly 100 computed as exp(log(...)) is written 100.0, not 100.00000000000004, and -0.0 (a difference of
    identical values, negated) 0.0. The metrics' own numbers (float32 models, float64 BLEU) carry fewer meaningful
    digits than that, so nothing a score says is lost."""
    return float(f"{v:.{SIGNIFICANT_DIGITS}g}") + 0.0 if math.isfinite(v) else v


def clean_json(obj: Any) -> Any:
    """NaN/inf -> None, numpy scalars -> Python and floats as :func:`plain_float`, so the output is valid JSON
    without rounding noise."""
    if isinstance(obj, dict):
        return {str(k): clean_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean_json(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        v = float(obj)
        return plain_float(v) if math.isfinite(v) else None
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.ndarray):
        return clean_json(obj.tolist())
    return obj


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""What a terminal obeys rather than shows: C0 controls but the line end and the tab (a carriage return too:
it would overwrite the line), DEL, C1 controls, and the bidirectional overrides and isolates (which reorder
what is shown)."""


def terminal_safe(text: str) -> str:
    """``text`` with every character of :data:`_CONTROL` written as its escape (ESC as ``\\x1b``, RLO as
    ``\\u202e``): what a terminal is shown, so a system name or a reply holding escape sequences can neither
    colour nor move nor retitle the user's terminal, nor reorder a line. Files and pipes get the text as it is."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                        else f"\\u{ord(m.group()):04x}", text)


def undecided_interval_words(low: float, high: float, p: float, p_name: str, level: float, of: str = "0") -> str:
    """'the interval excludes 0, but randomization p 0.071 >= 0.05: a winner needs both' for a difference with no
    winner whose interval excludes 0 (``p_name``: which p decides it, e.g. 'p (Holm)'): a table otherwise reads as
    contradicting itself; '' when the interval holds 0 or is missing, or p is."""
    excludes = math.isfinite(low) and math.isfinite(high) and (low > 0 or high < 0)
    if not excludes or not math.isfinite(p):
        return ""
    return f"the interval excludes {of}, but {p_name} {fmt_num(p, p=True)} >= {alpha_label(level)}: a winner needs both"
