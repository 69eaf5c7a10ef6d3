"""A small four-section wiki (transformer, gan, resnet pages) written with the real write
primitives, shared by the wiki-search and retrieval tests."""

from __future__ import annotations

from pathlib import Path

from episteme.wiki.edit import WikiWriter

SECTIONS = [
    ("transformer", "Scaled dot-product attention",
     "Why attention logits are divided by the square root of the key dimension.",
     "Dot products of high-dimensional queries and keys grow large, which pushes the softmax into "
     "regions with tiny gradients. Dividing by the square root of d_k keeps them in range.",
     ["attention.pdf"]),
    ("transformer", "Training cost of the big model",
     "BLEU on WMT14 and GPU days for the large Transformer.",
     "The big model reached 28.4 BLEU on English-German and trained for 3.5 days on 8 P100 GPUs.",
     ["attention.pdf"]),
    ("gan", "Adversarial training game",
     "A generator and a discriminator play a minimax game.",
     "The generator maps noise to samples while the discriminator tells real data from fakes; "
     "training alternates gradient steps for the two networks.",
     ["gan.pdf"]),
    ("resnet", "Residual connections",
     "Identity shortcuts that let very deep networks train.",
     "Stacked layers fit a residual function F(x) and the block outputs F(x) + x, so a layer "
     "that should do nothing only needs to push its weights towards zero.",
     ["resnet.pdf"]),
]


def make_wiki(root: Path, sections=SECTIONS) -> dict[str, str]:
    """A small wiki written with the real write primitives; returns title -> section id."""
    root.mkdir(parents=True, exist_ok=True)
    ids = {}
    with WikiWriter(root, op="test") as w:
        for page, title, desc, body, sources in sections:
            r = w.create_section(page, title=title, description=desc, body=body, sources=sources,
                                 page_title=page.title())
            ids[title] = r.section_id
    return ids
