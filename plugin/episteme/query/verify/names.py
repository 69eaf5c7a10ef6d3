"""Named things by form (``ResNet-152``, ``ViT``, ``English-German``), language pairs with their
direction, siblings (two names of one kind), and whether a passage names a claim's name."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ..text import fold, normalize, unligature

# ----------------------------------------------------------------------------------- entities

_TOKEN = re.compile(r"[^\s,;:()\[\]{}\"]+")
STRIP_LEAD = "'\"([{<*"
STRIP_TRAIL = ".,;:!?)]}>'\"*"
_PAIR = re.compile(r"\b([A-Z][a-z]+)(?:-to-|\s+to\s+|\s?→\s?|-)([A-Z][a-z]+)\b")


@dataclass
class Ent:
    """A named thing as written, its matching key (lower-case, letters and digits only; an
    ``X-to-Y`` pair as ``x-y``) and its span."""

    text: str
    key: str
    start: int
    end: int


# ISO 639-1 codes of languages: a language pair is written "English-to-German", "English-German",
# "En→De" or, in table headers, "EN-DE"; all read as the pair of codes, in order
LANGUAGES = {
    "english": "en", "german": "de", "french": "fr", "romanian": "ro", "czech": "cs",
    "russian": "ru", "chinese": "zh", "japanese": "ja", "spanish": "es", "italian": "it",
    "portuguese": "pt", "dutch": "nl", "finnish": "fi", "turkish": "tr", "arabic": "ar",
    "hindi": "hi", "korean": "ko", "polish": "pl", "swedish": "sv", "estonian": "et",
    "latvian": "lv", "lithuanian": "lt", "gujarati": "gu", "kazakh": "kk", "vietnamese": "vi",
    "hungarian": "hu", "greek": "el", "hebrew": "he", "danish": "da", "norwegian": "no",
    "ukrainian": "uk", "bulgarian": "bg", "croatian": "hr", "serbian": "sr", "slovak": "sk",
    "slovenian": "sl", "persian": "fa", "thai": "th", "indonesian": "id", "malay": "ms",
    "urdu": "ur", "bengali": "bn", "tamil": "ta", "swahili": "sw", "icelandic": "is",
    "tagalog": "tl", "filipino": "tl", "somali": "so", "nepali": "ne", "sinhala": "si",
    "amharic": "am", "yoruba": "yo", "hausa": "ha", "igbo": "ig", "zulu": "zu", "xhosa": "xh",
    "afrikaans": "af", "burmese": "my", "khmer": "km", "pashto": "ps", "kurdish": "ku",
    "mongolian": "mn", "uzbek": "uz", "basque": "eu", "catalan": "ca", "galician": "gl",
    "welsh": "cy", "irish": "ga", "maltese": "mt", "albanian": "sq", "macedonian": "mk",
    "bosnian": "bs", "armenian": "hy", "georgian": "ka", "azerbaijani": "az", "belarusian": "be",
    "malayalam": "ml", "telugu": "te", "kannada": "kn", "marathi": "mr", "punjabi": "pa",
}
#: codes that are also English words: never read as a language when written in lower case
_CODE_WORDS = frozenset(["no", "is", "it", "to", "in", "be", "as", "am", "an", "or", "so", "my",
                         "he", "me", "we", "us", "do", "go", "on", "at", "of", "if", "up", "ha", "ka"])
_LANG_CODES = frozenset(LANGUAGES.values())
_LANG_PAIR = re.compile(r"([A-Za-z]+)\s?(?:-to-|-|→|->|\s+to\s+)\s?([A-Za-z]+)")


def lang_pair(token: str) -> tuple[str, str] | None:
    """``("en", "de")`` for "English-to-German", "English-German", "En→De", "EN-DE", "sw-en" (lower
    case codes only when neither is an English word); None for anything that is not a pair of
    languages (direction kept: German-English is ("de", "en"))."""
    m = _LANG_PAIR.fullmatch(normalize(token).strip())
    if not m:
        return None
    out = []
    lower_codes = all(len(x) == 2 and x.islower() and x in _LANG_CODES and x not in _CODE_WORDS
                      for x in m.groups())  # "sw-en", "tl-en": a table's pair in lower case
    for part in m.groups():
        low = part.lower()
        if low in LANGUAGES:
            out.append(LANGUAGES[low])
        elif len(low) == 2 and low in _LANG_CODES and (part.isupper() or part.istitle() or lower_codes):
            out.append(low)
        else:
            return None
    return out[0], out[1]


def entity_key(token: str) -> str:
    pair = lang_pair(token)
    if pair:
        return pair[0] + pair[1]
    t = fold(unligature(normalize(token)))
    t = re.sub(r"(?i)-to-", "-", t)
    return re.sub(r"[^0-9a-z]", "", t.lower())


def _is_entity(tok: str, initial: bool) -> bool:
    letters = [c for c in tok if c.isalpha()]
    if len(letters) < 1 or len(tok) < 2:
        return False
    first_digit = next((i for i, c in enumerate(tok) if c.isdigit()), None)
    if first_digit is not None:
        # letters then digits: ResNet-152, P4, CoNLL-2012, v1.1, GPT-4o (not 10-crop, 2D)
        return any(c.isalpha() for c in tok[:first_digit]) and not re.fullmatch(r"\d+[eE]-?\d+", tok)
    if len(letters) >= 2 and any(c.isupper() for c in tok[1:]):
        return True  # ViT, MNIST, SciBERT, BERT-LARGE
    # a capitalised word inside a sentence: Treebank, Chrome, English-German
    return tok[0].isupper() and not initial


def entities_in(text: str) -> list[Ent]:
    """Named things of ``text`` by form (see the module docstring), in order (cached: a warm
    process meets the same passages again and again)."""
    return list(_entities_cached(text))


@functools.lru_cache(maxsize=8192)
def _entities_cached(text: str) -> tuple[Ent, ...]:
    return tuple(_entities(text))


def _entities(text: str) -> list[Ent]:
    text = normalize(text)
    out: list[Ent] = []
    prev_end_char = "."
    for m in _TOKEN.finditer(text):
        tok = m.group(0)
        s, e = m.start(), m.end()
        while tok and tok[0] in STRIP_LEAD:
            tok, s = tok[1:], s + 1
        while tok and tok[-1] in STRIP_TRAIL:
            tok, e = tok[:-1], e - 1
        before = text[max(0, m.start() - 3):m.start()].strip()
        initial = prev_end_char in ".!?:" or not before or before[-1:] in ".!?:"
        prev_end_char = m.group(0)[-1]
        if not tok or not _is_entity(tok, initial):
            continue
        if tok.lower() in _CAP_FUNCTION:
            continue
        key = entity_key(tok)
        if len(key) >= 2:
            out.append(Ent(tok, key, s, e))
    return out


# capitalised function words that open clauses or titles (never names)
_CAP_FUNCTION = frozenset(
    ["the", "a", "an", "in", "on", "of", "for", "and", "or", "but", "to", "with", "by", "from", "at", "as", "is", "are", "was", "were", "this", "that", "these", "those", "it", "its", "we", "our", "their", "they", "he", "she", "when", "where", "which", "while", "whereas", "however", "also", "table", "figure", "section", "fig", "eq", "equation"]
)


def shape(key_text: str) -> str:
    """Character classes with runs collapsed: ``ViT-Large`` → ``XxX-Xx``."""
    out = []
    for c in key_text:
        k = "X" if c.isupper() else "x" if c.islower() else "d" if c.isdigit() else c
        if not out or out[-1] != k:
            out.append(k)
    return "".join(out)


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def siblings(a: Ent | str, b: Ent | str, *, min_affix: int = 2) -> bool:
    """Two different names of the same kind, told apart by form: the same shape and a shared
    prefix or suffix (``ViT-Large``/``ViT-Huge``, ``P3``/``P4``, ``English-German``/
    ``English-French``, ``RNNsearch-50``/``RNNencdec-50``)."""
    ta, tb = (a.text if isinstance(a, Ent) else a), (b.text if isinstance(b, Ent) else b)
    pa, pb = lang_pair(ta), lang_pair(tb)
    if pa or pb:
        return bool(pa and pb and pa != pb)  # English-German / English-French / EN-FR
    ka, kb = entity_key(ta), entity_key(tb)
    if not ka or not kb or ka == kb or ka.rstrip("s") == kb.rstrip("s"):
        return False
    short, long_ = sorted((ka, kb), key=len)
    if long_.startswith(short) and (re.fullmatch(r"(?:e?d|e?s|ing)", long_[len(short):])
                                    or (re.fullmatch(r"\d{1,3}", long_[len(short):]) and short[-1:].isdigit())):
        # one name inflected ("Y-shape" / "Y-shaped"), or a reference number glued to it by the
        # page text ("IA3" / "IA350" = IA3 + ref. 50): the same name, not a sibling
        return False
    if shape(normalize(ta).replace("-to-", "-")) != shape(normalize(tb).replace("-to-", "-")):
        return False
    if re.sub(r"\d", "0", ka) == re.sub(r"\d", "0", kb) and re.search(r"[a-z]", ka):
        return True  # told apart by digits only: P3/P4, VGG-16/VGG-19, CoNLL-2003/CoNLL-2012
    if min_affix >= 3 and ka.isalpha() and kb.isalpha() and ka.islower() and kb.islower() \
            and ta.islower() and tb.islower():
        # plain words (roles): generator/discriminator, input/output
        return _common_prefix(ka, kb) >= min_affix or _common_prefix(ka[::-1], kb[::-1]) >= min_affix
    return _common_prefix(ka, kb) >= max(3, min_affix)  # names: ViT-Large/ViT-Huge, not ResNet/ImageNet


def claim_entities(claim: str) -> list[Ent]:
    seen: dict[str, Ent] = {}
    for e in entities_in(claim):
        seen.setdefault(e.key, e)
    return list(seen.values())
