"""Help-center search for Chinese and English: BM25 over character bigrams and words, in memory."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from .._records import Hit

_WORD = re.compile(r"[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*")
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")


def terms(text: str) -> list[str]:
    """Lowercased words and error codes, plus CJK character bigrams (single characters for 1-char runs)."""
    found = [w.lower() for w in _WORD.findall(text)]
    for run in _CJK_RUN.findall(text):
        found.extend(run[i : i + 2] for i in range(max(1, len(run) - 1)))
    return found


@dataclass(frozen=True, slots=True)
class _Doc:
    hit: Hit
    tf: Counter[str]
    length: int


class BM25Index:
    def __init__(self, articles: Sequence[Hit], *, k1: float = 1.5, b: float = 0.75) -> None:
        self._docs = [self._doc(a) for a in articles]
        self._k1, self._b = k1, b
        self._avg = sum(d.length for d in self._docs) / len(self._docs) if self._docs else 1.0
        df: Counter[str] = Counter()
        for d in self._docs:
            df.update(d.tf.keys())
        n = len(self._docs)
        self._idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    @staticmethod
    def _doc(article: Hit) -> _Doc:
        # The title counts twice: it says what the article is about more reliably than the body.
        tf = Counter(terms(article.title) * 2 + terms(article.body) + terms(article.id))
        return _Doc(article, tf, sum(tf.values()))

    def search(self, query: str, *, limit: int = 3) -> list[Hit]:
        wanted = set(terms(query))
        scored = []
        for d in self._docs:
            score = 0.0
            for t in wanted:
                f = d.tf.get(t, 0)
                if f:
                    norm = f + self._k1 * (1 - self._b + self._b * d.length / self._avg)
                    score += self._idf[t] * f * (self._k1 + 1) / norm
            if score > 0:
                scored.append((-score, d.hit.id, d.hit, score))
        scored.sort()
        return [Hit(h.id, h.title, h.body, h.url, round(s, 4)) for _, _, h, s in scored[:limit]]
