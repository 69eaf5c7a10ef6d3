"""A generated library for the growth benchmark (issue 15): many distinct papers, cheaply.

Why generated: measuring how ingest, chat, lint and rebuild grow needs hundreds of papers, and
only ten real ones are shared.  The papers are typeset by the project's own writer
(``tests/pdfgen.py``); this module adds what a growth corpus needs on top of it:

* topic words: each paper draws most of its vocabulary from one of several topic pools (plus a
  second pool and a few invented method names), so papers share words the way a real library
  does, and retrieval over them is not trivially one-paper-per-word;
* length: 4 to 20 pages (the number of sections and paragraphs is drawn per paper);
* tables: each paper has one to three tables (a numbered caption, a header row and rows of
  figures placed in columns), as the splitter meets them in real papers.

Everything is deterministic by seed (``random.Random(seed)``), and the PDFs are cached under
``$EPISTEME_GROWTH_CACHE`` (default ``/tmp/episteme-growth-corpus``) keyed by the seed and this
module's and ``pdfgen.py``'s source, so reruns cost nothing.  No sentence comes from elsewhere:
the text is random word sequences over our own word lists.
"""

from __future__ import annotations

import hashlib
import os
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import pdfgen  # noqa: E402

CACHE = Path(os.environ.get("EPISTEME_GROWTH_CACHE", "/tmp/episteme-growth-corpus"))

TOPICS: dict[str, tuple[str, ...]] = {
    "hydrology": ("river", "basin", "rainfall", "runoff", "aquifer", "sediment", "discharge",
                  "catchment", "flood", "gauge", "estuary", "groundwater", "infiltration"),
    "astronomy": ("galaxy", "redshift", "telescope", "spectrum", "luminosity", "quasar", "orbit",
                  "photometry", "nebula", "pulsar", "exoplanet", "parallax", "halo"),
    "genomics": ("genome", "allele", "sequencing", "transcript", "promoter", "variant", "locus",
                 "methylation", "phenotype", "chromatin", "splicing", "haplotype", "codon"),
    "robotics": ("gripper", "actuator", "trajectory", "odometry", "manipulator", "torque",
                 "servo", "lidar", "grasp", "locomotion", "joint", "planner", "payload"),
    "linguistics": ("morpheme", "syntax", "dialect", "phoneme", "lexicon", "corpus", "parser",
                    "treebank", "prosody", "inflection", "clause", "semantics", "discourse"),
    "economics": ("inflation", "tariff", "demand", "auction", "equilibrium", "consumer",
                  "wage", "subsidy", "liquidity", "monopoly", "elasticity", "portfolio", "bond"),
    "materials": ("alloy", "lattice", "crystal", "polymer", "fracture", "annealing", "grain",
                  "ceramic", "dopant", "thin-film", "hardness", "diffusion", "composite"),
    "networks": ("router", "packet", "latency", "throughput", "congestion", "bandwidth", "switch",
                 "protocol", "handshake", "topology", "queue", "jitter", "multicast"),
    "epidemiology": ("cohort", "incidence", "vaccine", "exposure", "prevalence", "outbreak",
                     "mortality", "screening", "transmission", "serology", "trial", "contact"),
    "climate": ("aerosol", "albedo", "forcing", "reanalysis", "monsoon", "permafrost", "ozone",
                "anomaly", "downscaling", "ensemble", "icesheet", "humidity", "radiation"),
    "optics": ("laser", "photon", "waveguide", "interferometer", "lens", "polarization",
               "aperture", "diffraction", "resonator", "fiber", "coherence", "prism", "beam"),
    "ecology": ("species", "habitat", "predator", "pollinator", "biomass", "forest", "canopy",
                "foraging", "migration", "wetland", "biodiversity", "niche", "grazing"),
}
GENERAL = ("method", "result", "analysis", "estimate", "sample", "measure", "model", "error",
           "baseline", "variance", "signal", "dataset", "experiment", "bound", "rate", "score",
           "parameter", "evaluation", "approach", "study", "effect", "across", "between",
           "shows", "improves", "reduces", "increases", "compared", "observed", "using")
_SYLLABLES = ("ka", "lo", "mir", "ven", "tos", "ru", "zel", "quin", "dra", "pho", "nex", "tal")


def _method_name(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(3)).capitalize()


class _Writer:
    """Sentences and paragraphs over one paper's vocabulary."""

    def __init__(self, rng: random.Random, topic: str, second: str):
        self.rng = rng
        self.main = TOPICS[topic]
        self.second = TOPICS[second]
        self.methods = [_method_name(rng) for _ in range(2)]

    def word(self) -> str:
        r = self.rng.random()
        if r < 0.45:
            return self.rng.choice(self.main)
        if r < 0.6:
            return self.rng.choice(self.second)
        if r < 0.63:
            return self.rng.choice(self.methods)
        return self.rng.choice(GENERAL)

    def sentence(self) -> str:
        words = [self.word() for _ in range(self.rng.randint(10, 20))]
        tail = (f" by {self.rng.randint(2, 60)}.{self.rng.randint(0, 9)} percent"
                if self.rng.random() < 0.3 else "")
        return " ".join(words).capitalize() + tail + ". "

    def paragraph(self) -> str:
        return "".join(self.sentence() for _ in range(self.rng.randint(4, 8)))


def generated_paper(seed: int, *, max_pages: int = 20) -> tuple[pdfgen.Paper, list[tuple[str, list[str], list[list[str]]]],
                                         pdfgen.Layout]:
    """The paper for ``seed``: its text, its tables (caption, header, rows), its layout."""
    rng = random.Random(seed)
    names = sorted(TOPICS)
    topic = names[seed % len(names)]
    second = rng.choice([n for n in names if n != topic])
    w = _Writer(rng, topic, second)
    pages = min(rng.randint(4, 20), max_pages)
    # about 5 paragraphs (~550 words) fill a page at 10 pt in one column
    paragraphs = pages * 5 - 4
    n_sections = max(3, min(9, paragraphs // 6))
    sections: list[pdfgen.Section] = []
    titles = ["Introduction", f"The {w.methods[0]} {w.rng.choice(w.main).title()} Model",
              f"{w.rng.choice(w.main).title()} Data", "Experiments",
              f"{w.rng.choice(w.second).title()} Effects", "Analysis", "Related Work",
              "Limitations", "Discussion"]
    left = paragraphs
    for i in range(n_sections):
        n = max(1, left // (n_sections - i)) if i < n_sections - 1 else max(1, left)
        left -= n
        sections.append(pdfgen.Section(str(i + 1), titles[i] if i < len(titles) - 1 else "Conclusion",
                                       [w.paragraph() for _ in range(n)]))
    sections[-1].title = "Conclusion"
    tables = []
    for t in range(rng.randint(1, 3)):
        cols = rng.randint(3, 5)
        header = ["Setting"] + [rng.choice(w.main).title() for _ in range(cols - 1)]
        rows = [[f"{rng.choice(w.methods)}-{k + 1}"] + [f"{rng.uniform(0, 100):.1f}" for _ in range(cols - 1)]
                for k in range(rng.randint(3, 7))]
        caption = (f"Table {t + 1}: {rng.choice(w.main).title()} {rng.choice(GENERAL)} "
                   f"of {w.methods[0]} on {rng.choice(w.second)} data.")
        tables.append((caption, header, rows))
    paper = pdfgen.Paper(
        title=f"{w.methods[0]}: {rng.choice(w.main).title()} and {rng.choice(w.second).title()} "
              f"{rng.choice(('Estimation', 'Modelling', 'Analysis', 'Inference'))}",
        authors=[f"{rng.choice(('Ana', 'Ben', 'Chen', 'Dara', 'Emil', 'Femi'))} "
                 f"{_method_name(rng)}" for _ in range(rng.randint(1, 4))],
        affiliations=[f"Institute of {topic.title()}"],
        abstract=w.paragraph(),
        sections=sections,
        references=[f"{_method_name(rng)}, A. {rng.choice(w.main).title()} {rng.choice(GENERAL)}. "
                    f"Journal of {topic.title()}, {rng.randint(1990, 2025)}." for _ in range(rng.randint(5, 15))],
    )
    layout = pdfgen.Layout(columns=rng.choice((1, 1, 2)), family=rng.choice(("Times", "Helvetica")),
                           running_header=paper.title[:60] if rng.random() < 0.5 else None)
    return paper, tables, layout


def typeset_with_tables(paper: pdfgen.Paper, tables, layout: pdfgen.Layout) -> bytes:
    """``pdfgen.typeset`` plus tables, placed after the first paragraph of sections 2, 3, 4:
    a caption line, then header and rows with one x position per column."""
    pending = list(tables)

    def place(ts, section: int, paragraph: int) -> None:
        if paragraph == 0 and section >= 1 and pending:
            _table(ts, *pending.pop(0))

    pdf, _ = pdfgen.typeset(paper, layout, after_paragraph=place)
    return pdf


def _table(ts, caption: str, header: list[str], rows: list[list[str]]) -> None:
    size = ts.lay.body_size - 1
    lead = size * 1.3
    ts.need(lead * (len(rows) + 3))
    ts.y -= size * 0.6
    ts.line(caption, size)
    step = ts.col_width / len(header)
    key_b, _ = ts.font(bold=True)
    key, _ = ts.font()
    for r, cells in enumerate([header, *rows]):
        ts.y -= lead
        for c, cell in enumerate(cells):
            ts.emit(cell[:14], ts.x0 + c * step, ts.y, key_b if r == 0 else key, size)
    ts.y -= size


def _source_key() -> str:
    h = hashlib.sha256()
    for p in (Path(__file__), REPO / "tests" / "pdfgen.py"):
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def corpus(n: int, *, start: int = 0, cache: Path | None = None, max_pages: int = 20) -> list[Path]:
    """Paths of generated papers ``start .. start + n - 1`` (made once, then cached);
    ``max_pages`` caps the drawn length (the benchmark's cheap filler papers)."""
    folder = (cache or CACHE) / f"gen-{_source_key()}-p{max_pages}"
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for seed in range(start, start + n):
        path = folder / f"gen{seed:04d}.pdf"
        if not path.is_file():
            paper, tables, layout = generated_paper(seed, max_pages=max_pages)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(typeset_with_tables(paper, tables, layout))
            os.replace(tmp, path)
        out.append(path)
    return out


def page_count(path: Path) -> int:
    import pypdf

    return len(pypdf.PdfReader(str(path)).pages)


if __name__ == "__main__":  # quick look: python benchmarks/growth_corpus.py 5
    paths = corpus(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
    for p in paths:
        print(p, page_count(p))
