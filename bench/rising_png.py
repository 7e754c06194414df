"""How long the digest's "Rising this week" plot takes to draw, and what it adds to a mail.

Draws the 9-bar PNG of ``adapters/mail/plot_png.py`` for many different share series (each one new, as
the renderer would meet them) and builds the MIME bytes of a digest-sized message with and without three
of them. Prints the CPU (model, cores, avx2/avx512 flags) with the figures.

    nice -n 5 .venv/bin/python -m bench.rising_png --plots 2000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench.topic_quality import cpu
from paperfeed.adapters.mail.message import build_message, to_bytes
from paperfeed.adapters.mail.plot_png import bar_png
from paperfeed.domain.mail import InlineImage, OutgoingMail


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plots", type=int, default=2000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    series = [tuple(float(x) for x in rng.random(9) * 0.2) for _ in range(args.plots)]
    bar_png(series[0])  # import Pillow outside the timing
    cpu_start, wall_start = time.process_time(), time.perf_counter()
    sizes = [len(bar_png(s)) for s in series]
    cpu_s, wall_s = time.process_time() - cpu_start, time.perf_counter() - wall_start

    text = "A digest of ten papers.\n" * 200
    html = "<p>A digest of ten papers.</p>\n" * 200
    plain = OutgoingMail("reader@example.org", "10 papers", text, html)
    images = tuple(
        InlineImage(f"rising-{i}.1@example.org", bar_png(series[i]), "png", f"r{i}.png") for i in range(3)
    )
    with_plots = OutgoingMail("reader@example.org", "10 papers", text, html, images=images)
    sender = "paperfeed <digest@example.org>"
    base = len(to_bytes(build_message(plain, sender)))
    grown = len(to_bytes(build_message(with_plots, sender)))

    print(f"CPU {cpu()}")
    print(
        f"bar_png: {args.plots} plots in {wall_s:.2f} s wall, {cpu_s:.2f} CPU-s: "
        f"{wall_s / args.plots * 1e3:.3f} ms wall, {cpu_s / args.plots * 1e3:.3f} ms CPU a plot; "
        f"{min(sizes)}–{max(sizes)} bytes (mean {sum(sizes) / len(sizes):.0f})"
    )
    print(f"a digest-sized message: {base:,} bytes; with 3 inline plots {grown:,} (+{grown - base:,})")


if __name__ == "__main__":
    main()
