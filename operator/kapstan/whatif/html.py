"""``kapstan report --html FILE``: the savings report as one self-contained page (inline CSS and SVG, no
script, nothing fetched), so it can be mailed or attached to a ticket and opened anywhere.

The chart is one pair of bars per NodePool and flavor, now beside kapstan's plan, on one price scale, with
the totals as a last pair; the table under it holds the same numbers. The page is well-formed XML too
(every element closed, text escaped), so tests and tools can read it with an XML parser.
"""

from __future__ import annotations

from html import escape

from kapstan.whatif.report import Report, Row

NOW_COLOUR = "#9aa5b1"
PLANNED_COLOUR = "#2f7d4f"
BAR_WIDTH = 28
GAP = 22
CHART_HEIGHT = 220
LEFT = 64
TOP = 24
BOTTOM = 70


def render_html(report: Report, title: str) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html xmlns="http://www.w3.org/1999/xhtml" lang="en"><head><meta charset="utf-8"/>'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1>"
        f'<p class="summary">Now <b>{report.total_now:.4f}/h</b>, kapstan from scratch '
        f"<b>{report.total_planned:.4f}/h</b>: saving <b>{report.saving:.4f}/h</b> "
        f"({_percent(report.saving, report.total_now)}).</p>"
        f"{chart(report)}{_table(report)}{_notes(report)}</body></html>\n"
    )


def chart(report: Report) -> str:
    """Inline SVG: a bar per (NodePool, flavor) and per side, height proportional to price per hour."""
    groups: list[tuple[str, float, float]] = [
        (f"{r.node_pool} {r.flavor}", r.price_now, r.price_planned) for r in report.rows
    ]
    groups.append(("total", report.total_now, report.total_planned))
    top = max([now for _, now, _ in groups] + [planned for _, _, planned in groups] + [1e-9])
    width = LEFT + len(groups) * (2 * BAR_WIDTH + GAP) + GAP
    height = TOP + CHART_HEIGHT + BOTTOM
    base = TOP + CHART_HEIGHT
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="price per hour, now and with kapstan">',
        f'<line x1="{LEFT}" y1="{base}" x2="{width - GAP / 2}" y2="{base}" stroke="#444"/>',
        f'<text x="{LEFT - 8}" y="{TOP + 4}" text-anchor="end" class="axis">{top:.2f}/h</text>',
        f'<text x="{LEFT - 8}" y="{base}" text-anchor="end" class="axis">0</text>',
    ]
    for index, (label, now, planned) in enumerate(groups):
        x = LEFT + GAP + index * (2 * BAR_WIDTH + GAP)
        for offset, (side, value, colour) in enumerate(
            (("now", now, NOW_COLOUR), ("kapstan", planned, PLANNED_COLOUR))
        ):
            bar = CHART_HEIGHT * value / top
            left = x + offset * BAR_WIDTH
            parts.append(
                f'<rect x="{left}" y="{base - bar:.2f}" width="{BAR_WIDTH - 2}" height="{bar:.2f}" '
                f'fill="{colour}" data-group="{escape(label)}" data-side="{side}" data-price="{value:.6f}">'
                f"<title>{escape(label)} {side}: {value:.4f}/h</title></rect>"
            )
        parts.append(
            f'<text x="{x + BAR_WIDTH}" y="{base + 16}" text-anchor="middle" class="label">{escape(label)}</text>'
        )
    legend_y = height - 18
    parts.append(f'<rect x="{LEFT}" y="{legend_y - 10}" width="12" height="12" fill="{NOW_COLOUR}"/>')
    parts.append(f'<text x="{LEFT + 18}" y="{legend_y}" class="axis">now</text>')
    parts.append(
        f'<rect x="{LEFT + 70}" y="{legend_y - 10}" width="12" height="12" fill="{PLANNED_COLOUR}"/>'
    )
    parts.append(f'<text x="{LEFT + 88}" y="{legend_y}" class="axis">kapstan from scratch</text>')
    parts.append("</svg>")
    return "".join(parts)


def _table(report: Report) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in COLUMNS)
    body = "".join(_row(cells(r)) for r in report.rows)
    total = _row(["total", "", "", f"{report.total_now:.4f}", "", f"{report.total_planned:.4f}"])
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}{total}</tbody></table>"


COLUMNS = ("NodePool", "flavor", "nodes now", "price/h now", "nodes kapstan", "price/h kapstan")


def cells(row: Row) -> list[str]:
    """One table row as text, shared by the terminal table and the page."""
    return [
        row.node_pool,
        row.flavor,
        str(row.nodes_now),
        f"{row.price_now:.4f}",
        str(row.nodes_planned),
        f"{row.price_planned:.4f}",
    ]


def _row(values: list[str]) -> str:
    return "<tr>" + "".join(f"<td>{escape(v)}</td>" for v in values) + "</tr>"


def _notes(report: Report) -> str:
    items = [f"{pod}: {reason}" for pod, reason in report.unplaced.items()]
    items += [f"node {name}: flavor unknown to the catalog, not counted" for name in report.unpriced]
    if not items:
        return ""
    return "<ul>" + "".join(f"<li>{escape(item)}</li>" for item in items) + "</ul>"


def _percent(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2em;color:#222}"
    "table{border-collapse:collapse;margin-top:1.5em}"
    "td,th{border:1px solid #ccc;padding:4px 10px;text-align:right}"
    "td:first-child,td:nth-child(2),th{text-align:left}"
    "tr:last-child td{font-weight:bold}"
    ".axis,.label{font-size:12px;fill:#444}"
)
