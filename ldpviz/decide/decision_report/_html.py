"""The report page's style and its HTML and number helpers (escaping, tables, figures, values as read)."""

from __future__ import annotations

import html
import math
from typing import Any

from ldpviz.render import png as render
from ldpviz.wording import length


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:#1a1a1a;
max-width:60rem;margin:1.5rem auto;padding:0 1rem;line-height:1.45;font-size:15px}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;border-bottom:1px solid #ccc;padding-bottom:.2rem;
margin-top:1.8rem}.meta{color:#555;font-size:.9rem}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}th,td{border:1px solid #ccc;padding:.25rem .5rem;
text-align:left;vertical-align:top}th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
.maps{display:flex;flex-wrap:wrap;gap:.8rem}.maps figure{margin:0;flex:0 1 420px}.maps img{max-width:100%;height:auto;
border:1px solid #ddd}figcaption{font-size:.85rem;color:#444}
.verdict{padding:.4rem .6rem;border-left:4px solid #888;background:#f7f7f7}.pass{border-color:#1b9e77}
.fail{border-color:#d7301f}pre{background:#f5f5f5;padding:.6rem;overflow-x:auto;font-size:.85rem;white-space:pre-wrap}
.note{color:#555;font-size:.88rem}
@media print{body{max-width:none;margin:0;font-size:11pt}h2{break-after:avoid}
figure,table,.verdict,pre{break-inside:avoid}.maps figure{flex:0 1 48%}a{color:inherit;text-decoration:none}}
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _num(value: Any, digits: int = 4) -> str:
    """A number for people, never in exponent form ('39,600', '0.0421', '0.000012')."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    v = float(value)
    if abs(v) >= 10 ** digits:
        return f"{v:,.0f}"
    text = f"{v:.{digits}g}"
    return text if "e" not in text else f"{v:.12f}".rstrip("0").rstrip(".")


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            return _jsonable(value.item())
        except (TypeError, ValueError):
            return str(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _table(header: list[str], rows: list[list[Any]], numeric: set[int] = frozenset()) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header) if any(header) else ""
    body = "".join("<tr>" + "".join(f"<td class='num'>{_e(c)}</td>" if i in numeric else f"<td>{_e(c)}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    thead = f"<thead><tr>{head}</tr></thead>" if head else ""
    return f"<table>{thead}<tbody>{body}</tbody></table>"


def _figure(png: bytes, caption: str, alt: str) -> str:
    return (f"<figure><img src='{render.data_uri(png)}' alt='{_e(alt)}'>"
            f"<figcaption>{_e(caption)}</figcaption></figure>")


def metric_value(metric: str, value: Any) -> str:
    """A metric's value as a reader reads it: distances in m or km ('70.2 km', '930 m'), others to 4 figures."""
    if value is None or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        return "—"
    if metric.endswith("_m"):
        return length(float(value))
    return _num(value)


def sentence(text: Any) -> str:
    """A message as a sentence: its first letter capitalised and a full stop at the end ('' stays '')."""
    text = str(text or "").strip()
    if not text:
        return ""
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", "!", "?")) else ".")
