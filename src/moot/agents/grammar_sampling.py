"""Grammar-constrained sampling that tests the grammar on the token drawn, not on the whole vocabulary.

llama-cpp-python puts the grammar first in its sampler chain, so every token of a constrained reply tests each of
the vocabulary's candidates (49,152 for SmolLM2) against the grammar: about half the time of a token of the
embedded model. llama.cpp's own tools (``common_sampler``) draw from the chain without the grammar, test only the
token drawn, and when the grammar refuses it draw again with the grammar applied to every candidate. This module
gives llama-cpp-python's ``Llama`` that sampler. Every token still satisfies the grammar.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import numpy as np


def sample_grammar_last(llama: Any) -> None:
    """Make ``llama``'s constrained generations draw first and test the grammar after (the instance only)."""
    plain = llama._init_sampler

    def init_sampler(*, grammar: Any = None, logits_processor: Any = None, **options: Any) -> Any:
        if grammar is None or logits_processor is not None:
            return plain(grammar=grammar, logits_processor=logits_processor, **options)
        return GrammarLastSampler(llama, plain(grammar=None, **options), grammar)

    llama._init_sampler = init_sampler


class GrammarLastSampler:
    """What ``Llama.sample`` asks of its sampler (``sample(ctx, idx) -> token``), with the grammar tested last."""

    def __init__(self, llama: Any, chain: Any, grammar: Any) -> None:
        import llama_cpp

        self._lib = llama_cpp
        self._chain = chain  # the model's own sampler chain (penalties, top-k/p, temperature, seed), no grammar
        self._grammar = llama_cpp.llama_sampler_init_grammar(
            llama._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        if not self._grammar:
            raise ValueError("llama.cpp could not build the reply's grammar")
        self._n_vocab = llama.n_vocab()
        self._data = (llama_cpp.llama_token_data * self._n_vocab)()
        self._table = np.ctypeslib.as_array(self._data)  # the same memory, as numpy fields id / logit / p
        self._one = (llama_cpp.llama_token_data * 1)()

    def _candidates(self, logits: Any) -> Any:
        """Every token of the vocabulary with its logit, as llama.cpp's samplers take them."""
        self._table["id"] = np.arange(self._n_vocab, dtype=np.int32)
        self._table["logit"] = np.ctypeslib.as_array(logits, shape=(self._n_vocab,))
        self._table["p"] = 0.0
        return self._lib.llama_token_data_array(self._data, self._n_vocab, -1, False)

    def _allowed(self, token: int) -> bool:
        self._one[0] = self._lib.llama_token_data(token, 1.0, 0.0)
        single = self._lib.llama_token_data_array(self._one, 1, -1, False)
        self._lib.llama_sampler_apply(self._grammar, ctypes.byref(single))
        return not math.isinf(single.data[0].logit)

    def _draw(self, candidates: Any, *samplers: Any) -> int:
        for sampler in samplers:
            self._lib.llama_sampler_apply(sampler, ctypes.byref(candidates))
        return int(candidates.data[candidates.selected].id)

    def sample(self, ctx: Any, idx: int = -1) -> int:
        logits = self._lib.llama_get_logits_ith(ctx.ctx, idx)
        token = self._draw(self._candidates(logits), self._chain.sampler)
        if not self._allowed(token):  # drawn again, from the tokens the grammar allows
            token = self._draw(self._candidates(logits), self._grammar, self._chain.sampler)
        self._lib.llama_sampler_accept(self._grammar, token)
        self._lib.llama_sampler_accept(self._chain.sampler, token)
        return token

    def close(self) -> None:
        if self._grammar:
            self._lib.llama_sampler_free(self._grammar)
            self._grammar = None
        self._chain.close()

    def __del__(self) -> None:
        self.close()
