#!/usr/bin/env python3
"""Chapter 5's block-mask figures, computed from the mask as the builder computes them (common/flex_mods.h).

    python3 chapters/figures/flex_block_masks.py     rewrites flex-block-mask.svg and flex-block-lists.svg here

One sequence of 1536 tokens (12 tiles of 128 a side) packed with four documents of 420, 150, 610 and 356 tokens.
A tile is full when the mask allows every element of it, empty when it allows none, partial otherwise
(ladder_flex_tile_kind); the lists are the rows and columns of kinds (ladder_flex_list_row).
"""
import os

BLOCK = 128
DOCS = [420, 150, 610, 356]
S = sum(DOCS)
T = (S + BLOCK - 1) // BLOCK
EMPTY, PARTIAL, FULL = 0, 1, 2
FILL = {EMPTY: "#eeeeee", PARTIAL: "#ffd08a", FULL: "#9fd89a"}
HERE = os.path.dirname(os.path.abspath(__file__))
FONT = 'font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12"'

doc = [d for d, n in enumerate(DOCS) for _ in range(n)]
starts = [sum(DOCS[:d]) for d in range(1, len(DOCS))]  # where documents 1.. begin


def document(i, j):
    return doc[i] == doc[j]


def document_causal(i, j):
    return doc[i] == doc[j] and i >= j


def kinds(mask):
    """kind[tq][tk], from every element of each tile."""
    out = []
    for tq in range(T):
        row = []
        for tk in range(T):
            vals = [mask(i, j) for i in range(tq * BLOCK, min(S, (tq + 1) * BLOCK))
                    for j in range(tk * BLOCK, min(S, (tk + 1) * BLOCK))]
            row.append(FULL if all(vals) else PARTIAL if any(vals) else EMPTY)
        out.append(row)
    return out


def text(x, y, s, size=12, anchor="start", weight="normal"):
    return (f'<text x="{x}" y="{y}" font-size="{size}" text-anchor="{anchor}" font-weight="{weight}" '
            f'fill="black">{s}</text>')


def legend(x, y):
    out = []
    for k, (kind, what) in enumerate([(FULL, "full: visited, the mask not evaluated"),
                                      (PARTIAL, "partial: visited, the mask evaluated per element"),
                                      (EMPTY, "empty: never visited")]):
        out.append(f'<rect x="{x}" y="{y + 18 * k}" width="12" height="12" fill="{FILL[kind]}" stroke="#333" '
                   f'stroke-width="0.8"/>')
        out.append(text(x + 18, y + 18 * k + 10, what))
    return out


def panel(x0, y0, kind, title, causal):
    """One grid of tile kinds at (x0, y0), with the documents' boundaries and the allowed elements outlined."""
    cell = 22
    side = T * cell
    scale = side / S
    out = [text(x0 + side / 2, y0 - 34, title, 13, "middle", "bold"),
           text(x0 + side / 2, y0 - 8, "key tile tk →", 11, "middle")]
    for t in range(T):
        out.append(text(x0 + t * cell + cell / 2, y0 + side + 14, t, 10, "middle"))
        out.append(text(x0 - 6, y0 + t * cell + cell / 2 + 4, t, 10, "end"))
    for tq in range(T):
        for tk in range(T):
            out.append(f'<rect x="{x0 + tk * cell}" y="{y0 + tq * cell}" width="{cell}" height="{cell}" '
                       f'fill="{FILL[kind[tq][tk]]}" stroke="#777" stroke-width="0.5"/>')
    lo = 0
    for n in DOCS:  # the allowed elements: each document's square (its lower triangle with causal)
        a, b = x0 + lo * scale, x0 + (lo + n) * scale
        ya, yb = y0 + lo * scale, y0 + (lo + n) * scale
        if causal:
            out.append(f'<polygon points="{a:.1f},{ya:.1f} {a:.1f},{yb:.1f} {b:.1f},{yb:.1f}" fill="#1f5fa0" '
                       f'fill-opacity="0.18" stroke="#1f5fa0" stroke-width="1"/>')
        else:
            out.append(f'<rect x="{a:.1f}" y="{ya:.1f}" width="{b - a:.1f}" height="{yb - ya:.1f}" fill="#1f5fa0" '
                       f'fill-opacity="0.18" stroke="#1f5fa0" stroke-width="1"/>')
        lo += n
    for s in starts:  # document boundaries across the whole plane
        p = s * scale
        out.append(f'<line x1="{x0 + p:.1f}" y1="{y0}" x2="{x0 + p:.1f}" y2="{y0 + side}" stroke="#c0392b" '
                   f'stroke-width="1.2" stroke-dasharray="4 2"/>')
        out.append(f'<line x1="{x0}" y1="{y0 + p:.1f}" x2="{x0 + side}" y2="{y0 + p:.1f}" stroke="#c0392b" '
                   f'stroke-width="1.2" stroke-dasharray="4 2"/>')
    out.append(f'<rect x="{x0}" y="{y0}" width="{side}" height="{side}" fill="none" stroke="#333"/>')
    counts = [sum(r.count(k) for r in kind) for k in (FULL, PARTIAL, EMPTY)]
    out.append(text(x0 + side / 2, y0 + side + 32, f"{counts[0]} full, {counts[1]} partial, {counts[2]} empty "
                    f"of {T * T}", 11, "middle"))
    return out


def svg(width, height, title, body):
    return "\n".join([f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                      f'viewBox="0 0 {width} {height}" {FONT}>', f"<title>{title}</title>",
                      f'<rect width="{width}" height="{height}" fill="white"/>'] + body + ["</svg>", ""])


def mask_figure(doc_kinds, causal_kinds):
    body = [text(20, 26, f"Block masks of {S} tokens in {len(DOCS)} documents ({', '.join(map(str, DOCS))}), "
                 f"tiles of {BLOCK}", 15, weight="bold")]
    body += legend(20, 42)
    body.append(f'<line x1="440" y1="48" x2="470" y2="48" stroke="#c0392b" stroke-width="1.2" '
                f'stroke-dasharray="4 2"/>')
    body.append(text(476, 52, "a document boundary"))
    body.append(f'<rect x="440" y="62" width="30" height="12" fill="#1f5fa0" fill-opacity="0.18" stroke="#1f5fa0"/>')
    body.append(text(476, 72, "the elements the mask allows"))
    body += panel(60, 150, doc_kinds, "document", False)
    body += panel(440, 150, causal_kinds, "document+causal", True)
    body.append(text(30, 150 + T * 11, "query tile tq", 11, "middle").replace(
        "<text ", f'<text transform="rotate(-90 30 {150 + T * 11})" '))
    return svg(760, 150 + T * 22 + 50, "flex block masks over packed documents", body)


def lists_of(kind, by_row):
    """Per tile along one axis: (partial list, full list), ascending, as ladder_flex_list_row writes them."""
    out = []
    for t in range(T):
        line = kind[t] if by_row else [kind[x][t] for x in range(T)]
        out.append(([x for x in range(T) if line[x] == PARTIAL], [x for x in range(T) if line[x] == FULL]))
    return out


def list_column(x0, y0, lists, title, sub, head, num, full_num):
    cell, row_h = 20, 24
    out = [text(x0, y0 - 40, title, 13, weight="bold"), text(x0, y0 - 22, sub, 11)]
    out.append(text(x0 + 20, y0 - 4, head, 11, "middle"))
    out.append(text(x0 + 50, y0 - 4, num, 11))
    for t, (partial, full) in enumerate(lists):
        y = y0 + t * row_h
        out.append(text(x0 + 20, y + 15, t, 11, "middle", "bold"))
        entries = [(x, PARTIAL) for x in partial] + [(x, FULL) for x in full]
        x = x0 + 50
        for k, (idx, kind) in enumerate(entries):
            if k == len(partial) and partial:
                x += 8  # the full list starts apart
            out.append(f'<rect x="{x}" y="{y + 2}" width="{cell}" height="{cell - 2}" fill="{FILL[kind]}" '
                       f'stroke="#333" stroke-width="0.6"/>')
            out.append(text(x + cell / 2, y + 15, idx, 10, "middle"))
            x += cell
        out.append(text(x + 6, y + 15, f"{len(partial)} + {len(full)}", 10))
    out.append(text(x0 + 50, y0 + T * row_h + 14, full_num, 11))
    return out


def lists_figure(kind):
    fwd, bwd = lists_of(kind, True), lists_of(kind, False)
    body = [text(20, 26, "The document+causal mask as lists: forward per query tile, backward per key tile", 15,
                 weight="bold")]
    body += legend(20, 42)
    body += list_column(30, 150, fwd, "forward: key tiles per query tile",
                        "kv_indices (partial), full_kv_indices (full)", "tq", "its key tiles tk",
                        "counts: kv_num_blocks + full_kv_num_blocks")
    body += list_column(400, 150, bwd, "backward (dK, dV): query tiles per key tile",
                        "q_indices (partial), full_q_indices (full)", "tk", "its query tiles tq",
                        "counts: q_num_blocks + full_q_num_blocks")
    return svg(760, 150 + T * 24 + 30, "flex block lists, forward and backward", body)


def main():
    doc_kinds, causal_kinds = kinds(document), kinds(document_causal)
    for name, content in (("flex-block-mask.svg", mask_figure(doc_kinds, causal_kinds)),
                          ("flex-block-lists.svg", lists_figure(causal_kinds))):
        with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
            f.write(content)


if __name__ == "__main__":
    main()
