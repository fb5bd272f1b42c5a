"""Fixed-shape batches (core.models.batching): a row's numbers never depend on the rows beside it. Where a
batch's rows do not change each other's numbers (float32 on an AVX2 CPU, core.models.device.rows_are_independent)
batches drop their dummy rows; the passes must then give the same bits as with them."""
import numpy as np
import pytest

from core.models import batching, device

TEXTS = ["hi", "how are you doing today?", "i love hiking in the mountains with my dog and my two kids",
         "no.", "what did you have for dinner last night?", "the weather is lovely", "ok", "see you tomorrow then!",
         "my favourite band is playing in town next week and i got tickets", "sleep more."]


def test_a_batch_keeps_its_dummy_rows_unless_rows_are_independent(monkeypatch):
    monkeypatch.setattr(device, "rows_are_independent", lambda dtype: False)
    assert batching.batch_rows(3, "float32") == batching.ROWS
    monkeypatch.setattr(device, "rows_are_independent", lambda dtype: dtype == "float32")
    assert batching.batch_rows(3, "float32") == 3 and batching.batch_rows(3, "bfloat16") == batching.ROWS


def test_rows_are_independent_only_for_float32_on_an_avx2_cpu(monkeypatch):
    monkeypatch.setattr(device, "cpu_kernels", lambda: "avx2")
    assert device.rows_are_independent("float32") and not device.rows_are_independent("bfloat16")
    for family in ("avx512-bf16", "amx-bf16", "avx512", "arm64", "avx2+isa:avx2"):
        monkeypatch.setattr(device, "cpu_kernels", lambda f=family: f)
        assert not device.rows_are_independent("float32"), family


def _both_ways(monkeypatch, compute):
    """``compute()`` with dummy rows, then without (where this CPU allows it)."""
    real = device.rows_are_independent
    monkeypatch.setattr(device, "rows_are_independent", lambda dtype: False)
    fixed = compute()
    monkeypatch.setattr(device, "rows_are_independent", real)
    return fixed, compute()


@pytest.mark.skipif(not device.rows_are_independent("float32"), reason="batches keep their dummy rows on this CPU")
def test_dropping_the_dummy_rows_gives_the_same_bits(monkeypatch):
    """MiniLM's token states (every sentence vector), the judge's frozen MiniLM layers and SmolLM2's reading (MME's
    SM and PM, the judge's reader), with and without dummy rows: bit for bit. (Small heads over one vector per row,
    MME's MiniLM classifiers and the judge's trained layers, keep fixed rows: a head's product over a handful of rows
    took another kernel and moved FM by 6e-7.)"""
    from core.judges.pairwise import bottom_states
    from core.models.encoders import mean_pooled, minilm_forward, minilm_tokenizer, smollm_threads
    from core.models.smollm_reading import chat_reading, response_token_logprobs

    fixed, trimmed = _both_ways(monkeypatch, lambda: np.stack(minilm_forward(TEXTS, mean_pooled)))
    assert np.array_equal(fixed, trimmed)
    seqs = [minilm_tokenizer()(t)["input_ids"] for t in TEXTS]
    fixed, trimmed = _both_ways(monkeypatch, lambda: [s.float().numpy() for s in bottom_states(seqs)])
    assert all(np.array_equal(a, b) for a, b in zip(fixed, trimmed))
    reading = chat_reading()
    items = [(reading.prompt([TEXTS[i], TEXTS[i + 1]]), reading.response_ids(TEXTS[i + 2])) for i in range(6)]

    def read():
        with smollm_threads():
            return response_token_logprobs(reading.model, reading.pad, items, step=32, entropy=True, layers=(6, 30))

    fixed, trimmed = _both_ways(monkeypatch, read)
    for (lp, ent, feats), (lp2, ent2, feats2) in zip(fixed, trimmed):
        assert np.array_equal(lp.numpy(), lp2.numpy()) and np.array_equal(ent.numpy(), ent2.numpy())
        assert np.array_equal(feats, feats2)
