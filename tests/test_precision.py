"""``DIALEVAL_PRECISION=bfloat16``: MiniLM's sentence encodings in bfloat16, close to float32's, the same on any
thread count, and kept apart from float32's in every memory and cache (benchmarks/precision.py measures the speed
and the tolerance)."""
import functools
import os

import numpy as np
import pytest

from core.engine import metric_namespace
from core.models.device import computed_on, device_key
from core.models.encoders import encode
from core.scoring import fixed_pass_threads, get_metric
from core.settings import SettingError, minilm_precision

TEXTS = [f"reply number {i}: I went hiking near the lake with my {i % 3 + 1} dogs last weekend" for i in range(20)]


def test_the_setting_reads_float32_by_default_and_names_what_it_takes(monkeypatch):
    monkeypatch.delenv("DIALEVAL_PRECISION", raising=False)
    assert minilm_precision() == "float32"
    for raw, want in (("bf16", "bfloat16"), (" BFloat16 ", "bfloat16"), ("fp32", "float32")):
        monkeypatch.setenv("DIALEVAL_PRECISION", raw)
        assert minilm_precision() == want
    monkeypatch.setenv("DIALEVAL_PRECISION", "fp16")
    with pytest.raises(SettingError, match="DIALEVAL_PRECISION must be one of float32, bfloat16"):
        minilm_precision()


def test_bfloat16_vectors_are_close_to_float32_and_never_mistaken_for_them(monkeypatch):
    monkeypatch.delenv("DIALEVAL_PRECISION", raising=False)
    exact = encode(TEXTS)
    plain_key = device_key("cpu")
    monkeypatch.setenv("DIALEVAL_PRECISION", "bfloat16")
    fast = encode(TEXTS)
    assert not np.array_equal(fast, exact)  # really another computation, not the float32 vectors remembered
    assert np.sum(fast * exact, axis=1).min() > 0.999
    assert device_key("cpu") == plain_key + "+minilm-bf16" and computed_on().endswith("+minilm-bf16")
    monkeypatch.setenv("DIALEVAL_PRECISION", "float32")
    assert np.array_equal(encode(TEXTS), exact)  # and float32's memory still answers with float32 vectors


def test_bfloat16_passes_run_on_the_pinned_thread_count_and_give_the_same_bytes(monkeypatch):
    """oneDNN's bfloat16 results move with the thread count, so those passes always run on ``SMOLLM_THREADS``;
    float32 ones follow the process's count (MKL's reproducible mode makes that safe)."""
    import torch

    from core.models.encoders import SMOLLM_THREADS, minilm_forward
    from core.models.memo import forget_all
    threads_seen = lambda states, ids: torch.get_num_threads()  # noqa: E731
    monkeypatch.setenv("DIALEVAL_PRECISION", "bfloat16")
    encode(TEXTS[:1])  # the models are loaded (loading sets the process's count) before the count is changed
    torch.set_num_threads(1)
    assert set(minilm_forward(TEXTS[:3], threads_seen)) == {SMOLLM_THREADS}
    assert torch.get_num_threads() == 1  # and restored after
    forget_all()
    one = encode(TEXTS)
    torch.set_num_threads(SMOLLM_THREADS)
    forget_all()
    assert np.array_equal(encode(TEXTS), one)
    monkeypatch.setenv("DIALEVAL_PRECISION", "float32")
    encode(TEXTS[:1])
    torch.set_num_threads(1)
    assert set(minilm_forward(TEXTS[:3], threads_seen)) == {1}


def test_scores_are_cached_apart_signed_and_workers_get_the_pinned_threads(monkeypatch):
    from core.metrics.mme import memory_key
    monkeypatch.delenv("DIALEVAL_PRECISION", raising=False)
    metric, bleu = get_metric("bert_ruber"), get_metric("bleu")
    plain, sig, keys = metric_namespace(metric), str(metric.signature()), {s: memory_key(s) for s in ("rm", "sm_nll")}
    assert "precision" not in sig and fixed_pass_threads(["bert_ruber", "bleu"]) is None
    monkeypatch.setenv("DIALEVAL_PRECISION", "bfloat16")
    assert metric_namespace(metric) == plain.replace("|device:", "|precision:bfloat16|device:") + "+minilm-bf16"
    assert str(metric.signature()) == sig + "|precision:bfloat16"  # as a report shows it
    assert "precision" not in str(bleu.signature())  # BLEU reads no sentence vector
    assert memory_key("rm") != keys["rm"] and memory_key("sm_nll") == keys["sm_nll"]  # SmolLM2's stay shared
    assert fixed_pass_threads(["bert_ruber", "bleu"]) == 2
    assert fixed_pass_threads(["bleu", "ruber", "mme_fm"]) is None  # static vectors, its own float32 MiniLM


@pytest.mark.slow  # BERT-RUBER and ADEM in float32 and bfloat16: ~10 s
def test_minilm_scores_move_within_the_stated_tolerance(monkeypatch, repo_root):
    """benchmarks/PRECISION.md: on 3,653 rated rows BERT-RUBER moved by at most 0.019 and ADEM by 0.014 (7.5 % and
    3 % of their spread); here the demo's first rows, with about twice that room."""
    from core.data import load_file
    from core.engine import score_examples
    rows = load_file(str(repo_root / "demo" / "demo.jsonl"))[:16]
    monkeypatch.delenv("DIALEVAL_PRECISION", raising=False)
    exact = score_examples(rows, ["bert_ruber", "adem"], cache=False)
    monkeypatch.setenv("DIALEVAL_PRECISION", "bfloat16")
    fast = score_examples(rows, ["bert_ruber", "adem"], cache=False)
    for metric, room in (("bert_ruber", 0.04), ("adem", 0.03)):
        d = np.abs(fast.column(metric) - exact.column(metric))
        assert d.max() <= room and d.max() > 0, (metric, d.max())


@pytest.mark.parametrize("kernels, native", [("amx-bf16", True), ("avx512-bf16", True), ("avx512", False),
                                             ("avx2", False), ("arm64", False), ("avx512-bf16+isa:avx2", False),
                                             ("avx512-bf16+isa:avx512_core_bf16", True), ("amx-bf16+isa:all", True),
                                             ("avx512-bf16+isa:avx10_1_512", True),
                                             ("avx512-bf16+isa:avx512_core", False)])
def test_bfloat16_counts_as_native_only_with_its_kernels(monkeypatch, kernels, native):
    """Without them oneDNN converts to float32 and bfloat16 MiniLM ran 0.3-0.7x as fast as float32 (dialeval warns)."""
    from core.models import device
    monkeypatch.setattr(device, "cpu_kernels", lambda: kernels)
    assert device.native_bfloat16() is native


def test_the_cpu_kind_is_read_from_the_flags_as_torch_reads_it(monkeypatch):
    """Without AVX-512F (and without ATEN_CPU_CAPABILITY) torch can only pick AVX2 or its default kernels, so the
    kind is read from /proc/cpuinfo's flags without importing torch; on this machine it is what torch says."""
    import torch
    from core.models import device
    set_for_torch = "ATEN_CPU_CAPABILITY" in os.environ  # torch read it when it loaded: then it may say otherwise
    monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)
    assert device.vector_capability({"sse4_2", "avx", "avx2", "fma"}) == "avx2"
    assert device.vector_capability({"sse4_2", "avx", "avx2"}) == "default"
    assert device.vector_capability({"sse4_2"}) == "default"
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        flags = next((set(line.split(":", 1)[1].split()) for line in f if line.startswith("flags")), set())
    if flags and not set_for_torch:
        assert device.vector_capability(flags) == str(torch.backends.cpu.get_cpu_capability()).lower()


@pytest.mark.parametrize("value, says", [("bfloat16", "caption"), ("fp16", "error")])
def test_the_dashboard_says_when_bfloat16_is_on_and_stops_on_a_bad_value(monkeypatch, repo_root, value, says):
    AppTest = pytest.importorskip("streamlit.testing.v1").AppTest
    from core.models import device
    monkeypatch.setattr(device, "cpu_kernels", lambda: "avx512-bf16")  # a CPU where bfloat16 is the fast path
    # SmolLM2's number format is cached per process: a fresh cache for this pretended CPU, the real one after
    monkeypatch.setattr(device, "smollm_dtype", functools.lru_cache(maxsize=1)(device.smollm_dtype.__wrapped__))
    monkeypatch.setenv("DIALEVAL_PRECISION", value)
    at = AppTest.from_file(str(repo_root / "app.py"), default_timeout=60)
    at.session_state["metrics"] = ["bleu"]
    at.run()
    assert not at.exception
    shown = [e.value for e in (at.sidebar.caption if says == "caption" else at.sidebar.error)]
    assert any("DIALEVAL_PRECISION" in text for text in shown), shown
