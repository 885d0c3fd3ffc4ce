"""Text analysis for keyword search: the same steps for messages and for queries.

Unicode-aware: words are runs of letters and digits in any script; accents are folded
(NFKD, combining marks dropped) and case is folded; words are stemmed with snowball
(English by default). Scripts written without spaces (Han, Hiragana, Katakana, Hangul)
are indexed as overlapping character pairs, and single characters when a run is one
character long, so "東京タワー" is found by "東京". English stop words (NLTK's list) are
skipped.
"""

import hashlib
import re
import unicodedata
from collections import Counter
from functools import lru_cache
from typing import Any

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Han (incl. extension A and compatibility), Hiragana, Katakana, Hangul syllables.
_CJK = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u31f0-\u31ff]+"
)
# NLTK's English stop list (the 179 words snowball's list grew into), as this analyser
# sees them: contractions are split at the apostrophe ("don't" -> "don", "t"), so only
# their parts are listed. Applied to messages and queries alike.
STOPWORDS = frozenset(
    (
        "i",
        "me",
        "my",
        "myself",
        "we",
        "our",
        "ours",
        "ourselves",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "he",
        "him",
        "his",
        "himself",
        "she",
        "her",
        "hers",
        "herself",
        "it",
        "its",
        "itself",
        "they",
        "them",
        "their",
        "theirs",
        "themselves",
        "what",
        "which",
        "who",
        "whom",
        "this",
        "that",
        "these",
        "those",
        "am",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "have",
        "has",
        "had",
        "having",
        "do",
        "does",
        "did",
        "doing",
        "a",
        "an",
        "the",
        "and",
        "but",
        "if",
        "or",
        "because",
        "as",
        "until",
        "while",
        "of",
        "at",
        "by",
        "for",
        "with",
        "about",
        "against",
        "between",
        "into",
        "through",
        "during",
        "before",
        "after",
        "above",
        "below",
        "to",
        "from",
        "up",
        "down",
        "in",
        "out",
        "on",
        "off",
        "over",
        "under",
        "again",
        "further",
        "then",
        "once",
        "here",
        "there",
        "when",
        "where",
        "why",
        "how",
        "all",
        "any",
        "both",
        "each",
        "few",
        "more",
        "most",
        "other",
        "some",
        "such",
        "no",
        "nor",
        "not",
        "only",
        "own",
        "same",
        "so",
        "than",
        "too",
        "very",
        "s",
        "t",
        "can",
        "will",
        "just",
        "don",
        "should",
        "now",
        "d",
        "ll",
        "m",
        "o",
        "re",
        "ve",
        "y",
        "ain",
        "aren",
        "couldn",
        "didn",
        "doesn",
        "hadn",
        "hasn",
        "haven",
        "isn",
        "ma",
        "mightn",
        "mustn",
        "needn",
        "shan",
        "shouldn",
        "wasn",
        "weren",
        "won",
        "wouldn",
    )
)
MAX_TERMS = 2_000  # per message: enough for ranking, bounded for huge pastes


def fold(text: str) -> str:
    """Lower case without accents: what substring search and phrases compare."""
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    return unicodedata.normalize("NFC", stripped).casefold()  # Hangul syllables recomposed


@lru_cache(maxsize=8)
def _stemmer(language: str) -> Any:
    """Imported at the first text analysed, not at start-up: ``snowballstemmer`` imports
    every language's stemmer (20 ms), and a start from a snapshot analyses nothing."""
    import snowballstemmer

    return snowballstemmer.stemmer(language)


@lru_cache(maxsize=200_000)
def _stem(word: str, language: str) -> str:
    return _stemmer(language).stemWord(word)


def terms(text: str, language: str = "english") -> list[str]:
    """The index terms of ``text``, in order (repeats kept: they are term frequency)."""
    found: list[str] = []
    for word in _WORD.findall(fold(text)):
        for part in _split_scripts(word):
            if _CJK.fullmatch(part):
                found.extend(_ngrams(part))
            elif part not in STOPWORDS and (len(part) > 1 or part.isdigit()):
                found.append(_stem(part, language))
        if len(found) >= MAX_TERMS:
            break
    return found[:MAX_TERMS]


def term_counts(text: str, language: str = "english") -> Counter[str]:
    return Counter(terms(text, language))


@lru_cache(maxsize=200_000)
def term_id(term: str) -> int:
    """A term as the index stores it: 64 bits of BLAKE2b (integers compare fast)."""
    digest = hashlib.blake2b(term.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def _split_scripts(word: str) -> list[str]:
    """A word that mixes CJK and other letters ("iPhone用") split at the script change."""
    if not _CJK.search(word):
        return [word]
    parts, last = [], 0
    for match in _CJK.finditer(word):
        parts += [word[last : match.start()], match.group()]
        last = match.end()
    parts.append(word[last:])
    return [p for p in parts if p]


def _ngrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]
