#!/usr/bin/env python3
"""Typeset ``examples/sample-paper.pdf``, the short original paper the README demo ingests.

The paper was written for episteme's demo: a short methods note on two related topics —
splitting documents into retrieval passages and the input limits of sentence-embedding
models — so a wiki built from it has pages that link to each other.  It is typeset with the
project's own PDF writer (``tests/pdfgen.py``): one column, numbered sections and
subsections, an abstract, references, an appendix and an outline.

    .venv/bin/python examples/make_sample_paper.py [--out examples/sample-paper.pdf]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import pdfgen  # noqa: E402
from pdfgen import Layout, Paper, Section  # noqa: E402

ABSTRACT = (
    "Question answering systems that cite their sources must decide, before any question is "
    "asked, how a document is cut into retrievable passages. Two constraints meet at that "
    "moment. The first is linguistic: a passage that starts or stops in the middle of a "
    "sentence is hard to quote and easy to misread. The second is mechanical: sentence "
    "embedding models read a bounded number of word pieces and silently ignore the rest, so a "
    "passage that is too long is represented only by its beginning. This note describes "
    "sentence-aware passage windows, a simple procedure that satisfies both constraints, "
    "explains why overlapping windows make answer tracing more robust, and works through a "
    "small example. No new model is proposed; the contribution is a careful statement of the "
    "bookkeeping that makes every retrieved passage traceable to a page."
)

SECTIONS = [
    Section("1", "Introduction", [
        "A research assistant that answers questions about papers is only as trustworthy as "
        "its citations. When the assistant claims that a model was trained for three days, a "
        "reader should be able to click through to the exact sentence that says so. This "
        "requirement shapes the whole pipeline, but it is decided very early: at ingest time, "
        "when each document is divided into the passages that are later embedded, searched "
        "and quoted.",
        "Most retrieval pipelines divide text into fixed windows of characters or tokens. Fixed "
        "windows are easy to implement, yet they routinely cut sentences in half and they "
        "ignore the structure that authors have already provided: sections, subsections and "
        "paragraphs. A passage that begins with the second half of a sentence cannot be "
        "quoted without misrepresenting the source. A window that straddles two sections "
        "mixes topics, which blurs its embedding.",
        "In this note we separate the problem into two related topics. Section 2 reviews "
        "passage retrieval and the input limits of sentence embedding models. Section 3 "
        "describes sentence-aware passage windows and the bookkeeping of character offsets "
        "and page numbers. Section 4 works through an example, Section 5 lists the ways the "
        "procedure can fail, Section 6 discusses related approaches and Section 7 concludes.",
    ]),
    Section("2", "Background", [
        "Two lines of work meet in source-traced question answering: retrieval over passages, "
        "and the models that turn passages into vectors.",
    ]),
    Section("2.1", "Passage Retrieval", [
        "Passage retrieval ranks short spans of text by their relevance to a query. Sparse "
        "methods score term overlap; dense methods embed the query and every passage into a "
        "shared vector space and rank passages by cosine similarity. Dense retrieval handles "
        "paraphrase well, which matters when an answer restates a finding in different words "
        "than the paper used.",
        "The unit of retrieval is a design decision. Whole sections are too coarse: a "
        "section of several pages covers many claims, and its single vector is a compromise "
        "between them. Single sentences are too fine: they lose the context that makes a "
        "claim interpretable, such as the definition of a symbol two sentences earlier. "
        "Passages of a few sentences sit between these extremes.",
    ], 2),
    Section("2.2", "Input Limits of Sentence Embeddings", [
        "Sentence embedding models are usually small transformer encoders followed by mean "
        "pooling. They are trained on inputs of bounded length, and at inference they truncate "
        "longer inputs to a fixed number of word pieces. A common compact model reads at most "
        "256 word pieces; everything after that point has no influence on the vector.",
        "Truncation is silent. The model returns a perfectly ordinary vector for a passage of "
        "two thousand word pieces, but that vector describes only the first eighth of the "
        "passage. A retrieval system built on such vectors will never find a claim made near "
        "the end of a long section, however precisely a question targets it. Counting word "
        "pieces with the model's own tokenizer, rather than characters or words, is therefore "
        "the only reliable way to keep every passage fully visible to the encoder.",
    ], 2),
    Section("3", "Sentence-Aware Passage Windows", [
        "We now combine the two observations into one procedure. Its input is a section of a "
        "paper, already separated from the sections around it; its output is a list of "
        "passages, each a run of whole sentences that fits the encoder.",
    ]),
    Section("3.1", "Splitting Sentences", [
        "Scientific prose is hostile to naive sentence splitting. A period ends a sentence, "
        "but it also appears in abbreviations such as e.g. and i.e., in author lists such as "
        "Lee et al. (2019), in references to figures such as Fig. 3, and in decimal numbers "
        "such as 0.25. A splitter that breaks at every period produces fragments that are "
        "meaningless on their own.",
        "Our splitter treats a period as a boundary only when it is followed by whitespace and "
        "a capital letter, digit or opening bracket, and when the word before it is not a "
        "known abbreviation or a single initial. Question marks, exclamation marks and "
        "paragraph breaks always end a sentence. The rules are few, but they handle the "
        "patterns that dominate academic text.",
    ], 2),
    Section("3.2", "Packing Windows", [
        "Given the sentences of a section, we pack them greedily: a window grows by one "
        "sentence at a time while the word-piece count of the whole window stays within a "
        "budget. We use a budget of 200 word pieces, which leaves a margin below the encoder "
        "limit for the special tokens that the tokenizer adds. When the window is full, the "
        "next window starts one sentence before the end of the previous one, so consecutive "
        "windows overlap by a sentence.",
        "A single sentence may exceed the budget on its own, for example a long list of "
        "hyperparameters. Such a sentence is cut at word boundaries into pieces that each fit; "
        "this is the only case in which a passage does not end at a sentence boundary.",
    ], 2),
    Section("3.3", "Offsets and Pages", [
        "Every passage records the character offsets where it starts and ends in its section "
        "text. The section, in turn, records the offset at which each of its pages begins. "
        "Mapping a passage to a page is then a binary search over those offsets. Because the "
        "passage text is an exact slice of the section text, a quotation shown to a reader "
        "can be highlighted in the section without any fuzzy matching.",
    ], 2),
    Section("4", "A Worked Example", [
        "We illustrate the procedure on a typical methods section and then follow one "
        "question from retrieval to citation.",
    ]),
    Section("4.1", "The Section and Its Windows", [
        "Consider a section of about 1,400 words that describes a training procedure. Its "
        "sentences average 27 word pieces, and its longest sentence, a list of learning rates "
        "and batch sizes, has 230 word pieces. Packing with a budget of 200 word pieces and "
        "an overlap of one sentence yields windows of six to eight sentences. The long "
        "sentence is cut into two pieces at a word boundary, and each piece becomes its own "
        "passage.",
        "The section spans two pages. Its first page break falls in the middle of a "
        "paragraph, so one window contains text from both pages. Such a window is attributed "
        "to the page on which it starts, which is where a reader following the citation will "
        "begin reading.",
    ], 2),
    Section("4.2", "Tracing an Answer", [
        "Suppose a reader asks how long the model was trained. The relevant sentence sits "
        "near the end of the section. Embedded as a single vector, the section would be "
        "truncated long before that sentence, and the question could not retrieve it. With "
        "passage windows, the sentence appears in two overlapping passages, and whichever "
        "one ranks higher can be quoted together with its page number.",
        "The overlap also protects claims that span a sentence boundary. When the first "
        "sentence introduces a quantity and the second reports its value, at least one "
        "window contains both sentences, so an answer that combines them can still be traced "
        "to a single passage.",
        "Tracing works in the other direction as well. Given an answer written from a wiki "
        "page, the system embeds each claim of the answer, searches only the passages of the "
        "papers that the wiki page was compiled from, and returns the best passage for each "
        "claim with its similarity. A claim whose best passage has a low similarity is "
        "flagged as unsupported rather than silently attributed.",
    ], 2),
    Section("5", "Failure Modes", [
        "Passage windows inherit every error made before them. Two kinds of error matter in "
        "practice.",
    ]),
    Section("5.1", "Broken Text Extraction", [
        "Text extracted from a PDF may interleave the two columns of a page, keep words "
        "hyphenated at line ends, or include running headers and page numbers in the middle "
        "of a sentence. Each of these damages sentence splitting: a header inserted between "
        "two lines of a sentence becomes part of it, and a hyphenated word is no longer "
        "found by a search for the word. Repairing the text before it is split is therefore "
        "part of the procedure, not an optional cleanup.",
    ], 2),
    Section("5.2", "Tables, Equations and References", [
        "Tables and displayed equations have no sentences in the usual sense. They tend to "
        "produce long runs of numbers and symbols that the splitter treats as one sentence, "
        "which is then cut at word boundaries. Reference lists are worse: every entry is a "
        "sentence-like string full of names and years that resembles the claims in the body. "
        "We keep the references as a separate, flagged section, so an answer is never traced "
        "to a bibliography entry by accident.",
    ], 2),
    Section("6", "Related Work", [
        "Fixed-length chunking is the default in many retrieval toolkits and is often "
        "combined with a character overlap. Structure-aware chunking follows document markup "
        "such as headings or paragraphs when it is available. Sentence-window retrieval "
        "embeds single sentences but returns their neighbours for context. Our procedure can "
        "be read as structure-aware chunking whose size limit is measured in the encoder's "
        "own units, with the section as the outer boundary and the sentence as the inner one.",
    ]),
    Section("7", "Conclusion", [
        "Source-traced question answering depends on decisions made at ingest time. "
        "Sentence-aware passage windows keep every passage quotable, keep every passage "
        "within the encoder's input limit, and keep every passage mapped to a page. The "
        "procedure is small enough to state in a page and to test exhaustively, which is "
        "exactly what a component responsible for citations should be.",
    ]),
    Section("", "Acknowledgements", [
        "This paper was written as demonstration material for the episteme project.",
    ]),
]

REFERENCES = [
    "R. Alder and K. Moss. Ranking short passages with dense vectors. Workshop on Retrieval "
    "Methods, 2021.",
    "P. Brandt. Why tokenizers matter for embedding length limits. Notes on Applied NLP, 2022.",
    "S. Ortiz, L. Chen and M. Weber. Sentence boundaries in scientific text. Journal of "
    "Document Engineering, 14(2):101-118, 2020.",
    "T. Varga. Structure-aware chunking for question answering over manuals. In Proceedings of "
    "the Conference on Document Systems, 2023.",
]

APPENDIX = [
    Section("A", "Implementation Notes", [
        "The procedure needs three functions: a sentence splitter that returns character "
        "spans, a word-piece counter that wraps the encoder's tokenizer with truncation "
        "disabled, and the greedy packer. Counting with truncation disabled is essential: a "
        "counter that truncates would report that every long passage fits.",
    ]),
    Section("A.1", "Choosing the Budget", [
        "The budget should leave room for the tokens the encoder adds at the start and end of "
        "every input, and for small differences between counting a window as a whole and "
        "summing its sentences. A margin of a few dozen word pieces below the encoder limit "
        "is sufficient in practice.",
    ], 2),
]


def build() -> Paper:
    return Paper(
        title="Sentence-Aware Passage Windows for Source-Traced Question Answering",
        authors=["Ada Quill", "Bram Osei"],
        affiliations=["Demonstration paper for the episteme project"],
        abstract=ABSTRACT,
        sections=SECTIONS,
        references=REFERENCES,
        appendix=APPENDIX,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(HERE / "sample-paper.pdf"))
    args = ap.parse_args()
    layout = Layout(columns=1, body_size=11.0, outline=True,
                    running_header="Sentence-Aware Passage Windows", page_numbers=True)
    path = pdfgen.make_paper_pdf(args.out, build(), layout)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
