"""Fixed-shape batches: the numbers computed for one text never depend on the texts scored with it.

Matrix kernels (BLAS, oneDNN, and AMX tiles in bfloat16 most of all) round differently for different batch
shapes, and padding a sequence to a longer batch changes its attention sums. So scoring a row alone, or beside
other rows, gave different numbers: up to 0.02 on MME's SmolLM2 specificity scores and 8e-7 on MiniLM vectors
(docs/architecture.md, "Same input, same numbers"). Here every model pass runs on batches of exactly ``rows``
rows (the last filled with dummy rows) whose padded length depends only on each sequence's own length (rounded
up to a multiple of ``step``). A sequence's result is then a function of the sequence alone: scoring a file by
itself or beside any partner gives bit-identical per-row numbers, and a result cached per row equals a fresh one.
It is also faster than padding length-sorted batches to their longest member (measured: MiniLM 486 vs 418
texts/s on 2 cores). Where a batch's rows do not change each other's numbers (float32 on an AVX2 CPU,
``core.models.device.rows_are_independent``) a transformer batch holds only its real rows, or as many as make
``MIN_BATCH_TOKENS`` positions (:func:`batch_rows`): same bits, without most of the dummy rows' work.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

ROWS = 16  # rows in every batch of a transformer pass
STEP = 8  # sequence lengths are padded up to a multiple of this
HEAD_ROWS = 256  # rows in every batch of a small head (MLP, linear layer) over vectors


MIN_BATCH_TOKENS = 64  # a batch without dummy rows still holds at least this many token positions


def batch_rows(n: int, dtype: str, length: int) -> int:
    """How many rows a transformer batch of ``n`` real sequences of padded ``length`` in ``dtype`` (``"float32"``,
    ``"bfloat16"``) has on the active device: ``ROWS`` (the rest dummy rows), or where rows do not change each
    other's numbers (``core.models.device.rows_are_independent``) just ``n``, raised to at least
    ``MIN_BATCH_TOKENS`` token positions (at most ``ROWS`` rows). The floor: the judge's frozen MiniLM layers
    gave other bits for one 8-token row alone (a product of 8 rows took another kernel); every batch of 16 token
    positions or more gave the same bits as 16 rows (MiniLM at padded lengths 8-64, SmolLM2 at 32-128, every row
    count; 2 AVX2 cores, 2026-11-28). The padded length matters everywhere and stays."""
    from core.models import device
    if not device.rows_are_independent(dtype):
        return ROWS
    return min(ROWS, max(n, -(-MIN_BATCH_TOKENS // max(1, length))))


def dtype_name(module) -> str:
    """The number format of a torch module's first parameter (``"float32"``, ``"bfloat16"``, ...)."""
    return str(next(module.parameters()).dtype).removeprefix("torch.")


def fixed_shape_batches(lengths: Sequence[int], rows: int = ROWS, step: int = STEP) -> list[tuple[list[int], int]]:
    """``[(indices, padded_length), ...]``: the indices of ``lengths`` grouped by their length rounded up to a
    multiple of ``step`` (``step=1``: exact lengths, for recurrent encoders that read to each row's end), at most
    ``rows`` per batch. The caller pads every batch to ``padded_length`` and to exactly ``rows`` rows, or to
    :func:`batch_rows` rows where rows are independent."""
    buckets: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        buckets.setdefault(max(step, -(-max(int(n), 1) // step) * step), []).append(i)
    return [(group[s:s + rows], length) for length, group in sorted(buckets.items())
            for s in range(0, len(group), rows)]


def in_fixed_rows(fn: Callable[[np.ndarray], np.ndarray], x: np.ndarray, rows: int = HEAD_ROWS) -> np.ndarray:
    """``fn`` over the rows of ``x`` in chunks of exactly ``rows`` rows (the last padded with zero rows), so a
    row's output does not depend on how many rows came with it."""
    x = np.asarray(x)
    n = len(x)
    if n == 0:
        return fn(np.zeros((rows,) + x.shape[1:], dtype=x.dtype))[:0]
    out = []
    for s in range(0, n, rows):
        chunk = x[s:s + rows]
        k = len(chunk)
        if k < rows:
            chunk = np.concatenate([chunk, np.zeros((rows - k,) + x.shape[1:], dtype=x.dtype)])
        out.append(np.asarray(fn(chunk))[:k])
    return np.concatenate(out)


def encode_sequences(seqs: Sequence[Sequence[int]], encode: Callable, rows: int = ROWS, step: int = 1,
                     pad_id: int = 0) -> np.ndarray:
    """``encode(ids, lengths) -> (rows x d) tensor`` over token-id sequences on fixed-shape batches (``step=1``:
    every batch holds sequences of one exact length, as a recurrent encoder that stops at each row's end needs;
    dummy rows repeat the padding id); returns the n x d vectors in input order."""
    import torch
    out = None
    with torch.inference_mode():
        for idx, length in fixed_shape_batches([len(s) for s in seqs], rows, step):
            ids, _ = padded_batch(seqs, idx, length, rows, pad_id)
            lengths = torch.tensor([max(1, len(seqs[i])) for i in idx] + [length] * (rows - len(idx)))
            vecs = encode(ids, lengths).float().numpy()
            if out is None:
                out = np.zeros((len(seqs), vecs.shape[1]), dtype=np.float32)
            out[idx] = vecs[:len(idx)]
    return out if out is not None else np.zeros((0, 0), dtype=np.float32)


def padded_batch(seqs: Sequence[Sequence[int]], idx: Sequence[int], length: int, rows: int = ROWS,
                 pad_id: int = 0):
    """(ids, mask): ``rows`` x ``length`` long tensors holding the sequences ``idx`` of ``seqs`` left-aligned and
    padded with ``pad_id``; dummy rows attend to their first position only, so every row's attention is defined."""
    import torch
    ids = torch.full((rows, length), pad_id, dtype=torch.long)
    mask = torch.zeros((rows, length), dtype=torch.long)
    for j, i in enumerate(idx):
        ids[j, :len(seqs[i])] = torch.tensor(list(seqs[i]), dtype=torch.long)
        mask[j, :len(seqs[i])] = 1
    mask[len(idx):, 0] = 1
    return ids, mask
