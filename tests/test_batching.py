"""Fixed-shape batches (core.models.batching): a row's numbers never depend on the rows beside it. Where a
batch's rows do not change each other's numbers (float32 on an AVX2 CPU, core.models.device.rows_are_independent)
batches drop their dummy rows (down to MIN_BATCH_TOKENS positions); the passes must then give the same bits as with
them."""
import numpy as np
import pytest

from core.models import batching, device

TEXTS = ["hi", "how are you doing today?", "i love hiking in the mountains with my dog and my two kids",
         "no.", "what did you have for dinner last night?", "the weather is lovely", "ok", "see you tomorrow then!",
         "my favourite band is playing in town next week and i got tickets", "sleep more."]


def test_a_batch_keeps_its_dummy_rows_unless_rows_are_independent(monkeypatch):
    monkeypatch.setattr(device, "rows_are_independent", lambda dtype: False)
    assert batching.batch_rows(3, "float32", 64) == batching.ROWS
    monkeypatch.setattr(device, "rows_are_independent", lambda dtype: dtype == "float32")
    assert batching.batch_rows(3, "float32", 64) == 3 and batching.batch_rows(3, "bfloat16", 64) == batching.ROWS
    # at least MIN_BATCH_TOKENS positions: one 8-token row alone took another kernel in the judge's MiniLM layers
    assert batching.batch_rows(1, "float32", 8) == 8 and batching.batch_rows(3, "float32", 16) == 4
    assert batching.batch_rows(1, "float32", 4096) == 1 and batching.batch_rows(16, "float32", 8) == batching.ROWS


def test_rows_are_independent_only_for_float32_on_an_avx2_cpu_in_mkls_reproducible_mode(monkeypatch):
    monkeypatch.setattr(device, "cpu_kernels", lambda: "avx2")
    monkeypatch.setattr(device, "cpu_flags", lambda: frozenset({"avx2", "fma"}))
    monkeypatch.setattr(device, "_reproducible_mkl", lambda: True)
    assert device.rows_are_independent("float32") and not device.rows_are_independent("bfloat16")
    for family in ("avx512-bf16", "amx-bf16", "avx512", "arm64", "avx2+isa:avx2"):
        monkeypatch.setattr(device, "cpu_kernels", lambda f=family: f)
        assert not device.rows_are_independent("float32"), family
    monkeypatch.setattr(device, "cpu_kernels", lambda: "avx2")
    # torch told to use AVX2 kernels (ATEN_CPU_CAPABILITY) on an AVX-512 CPU: MKL still runs its AVX-512 code
    monkeypatch.setattr(device, "cpu_flags", lambda: frozenset({"avx2", "fma", "avx512f"}))
    assert not device.rows_are_independent("float32")
    monkeypatch.setattr(device, "cpu_flags", lambda: frozenset({"avx2", "fma"}))
    monkeypatch.setattr(device, "_reproducible_mkl", lambda: False)  # MKL used before core was imported
    assert not device.rows_are_independent("float32")
    monkeypatch.setattr(device, "_reproducible_mkl", lambda: True)
    monkeypatch.setattr(device, "active_device", lambda: "cuda")
    assert not device.rows_are_independent("float32")


def _both_ways(monkeypatch, compute):
    """``compute()`` with dummy rows, then without (where this CPU allows it)."""
    real = device.rows_are_independent
    monkeypatch.setattr(device, "rows_are_independent", lambda dtype: False)
    fixed = compute()
    monkeypatch.setattr(device, "rows_are_independent", real)
    return fixed, compute()


@pytest.mark.skipif(not device.rows_are_independent("float32"), reason="batches keep their dummy rows on this CPU")
def test_dropping_the_dummy_rows_gives_the_same_bits(monkeypatch):
    """MiniLM's token states (every sentence vector), the judge's frozen and trained MiniLM layers and SmolLM2's
    reading (MME's SM and PM, the judge's reader), with and without dummy rows: bit for bit. (Small heads over one
    vector per row, MME's MiniLM classifiers and the judge's head, keep fixed rows: a head's product over a handful
    of rows took another kernel and moved FM by 6e-7.)"""
    from core.judges.pairwise import bottom_states, encode_pairs, load_judge
    from core.models.encoders import mean_pooled, minilm_forward, minilm_tokenizer, smollm_threads
    from core.models.smollm_reading import chat_reading, response_token_logprobs

    for texts in (TEXTS, TEXTS[:1]):  # partly filled batches, and a batch of one row (one text scored alone)
        fixed, trimmed = _both_ways(monkeypatch, lambda: np.stack(minilm_forward(texts, mean_pooled)))
        assert np.array_equal(fixed, trimmed)
        seqs = [minilm_tokenizer()(t)["input_ids"] for t in texts]
        fixed, trimmed = _both_ways(monkeypatch, lambda: [s.float().numpy() for s in bottom_states(seqs)])
        assert all(np.array_equal(a, b) for a, b in zip(fixed, trimmed))
    judge = load_judge()
    for n in (5, 1):  # the judge's trained layers and head: partly filled batches, and one pair alone
        enc = encode_pairs([[t] for t in TEXTS[:n]], TEXTS[1:n + 1], TEXTS[2:n + 2], None, n_frozen=judge.n_frozen,
                           reader=False, mme_weights=None)
        fixed, trimmed = _both_ways(monkeypatch, lambda: (judge.minilm_logits(enc), judge.head_inputs(enc)))
        assert np.array_equal(fixed[0], trimmed[0]) and np.array_equal(fixed[1], trimmed[1])
    reading = chat_reading()
    items = [(reading.prompt([TEXTS[i], TEXTS[i + 1]]), reading.response_ids(TEXTS[i + 2])) for i in range(6)]
    items.append((reading.prompt(["and you?"]), reading.response_ids("fine.")))

    for group in (items, items[-1:]):  # partly filled batches, and one reading alone
        def read():
            with smollm_threads():
                return response_token_logprobs(reading.model, reading.pad, group, step=32, entropy=True,
                                               layers=(6, 30))

        fixed, trimmed = _both_ways(monkeypatch, read)
        for (lp, ent, feats), (lp2, ent2, feats2) in zip(fixed, trimmed):
            assert np.array_equal(lp.numpy(), lp2.numpy()) and np.array_equal(ent.numpy(), ent2.numpy())
            assert np.array_equal(feats, feats2)
