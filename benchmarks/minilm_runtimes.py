"""MiniLM on other runtimes: would ONNX Runtime or int8 dynamic quantization make the MiniLM-bound metrics faster
at (nearly) the same numbers? (issue 23, item 3.) Prints a table; nothing here is used by the product.

    pip install onnxruntime onnx        # only for this script
    python benchmarks/minilm_runtimes.py [--n 2000] [--threads 2]

For ``--n`` distinct chitchat replies (``common.sample_examples``), all-MiniLM-L6-v2 sentence vectors (mean of
the last token states, L2-normalized: ``core.models.encoders.mean_pooled``) on the product's fixed-shape batches
(``core.models.batching``), from:

- **torch float32**: the shipped path (``core.models.encoders.minilm_model``);
- **torch int8**: ``torch.ao.quantization.quantize_dynamic`` of its Linear layers (int8 weights, activations
  quantized per batch);
- **torch bfloat16**: a copy of the model cast to bfloat16 (as SmolLM2 runs; states cast back to float32 before
  pooling);
- **ORT float32**: the same weights exported by ``torch.onnx.export``, run by ONNX Runtime (all graph
  optimizations);
- **ORT int8**: that graph after ``onnxruntime.quantization.quantize_dynamic`` (int8 weights).

Per runtime: texts/s (after a warm-up pass), the largest |difference| and the mean and smallest cosine to the shipped
vectors, and the share of 200 query texts whose top-15 neighbours among all the texts (the retrieval υBLEU does)
are the same set as with the shipped vectors.
"""
from __future__ import annotations

import argparse
import copy
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import sample_examples


def vectors(texts, run_batch) -> np.ndarray:
    """Sentence vectors of ``texts`` with ``run_batch(ids int64 array, mask int64 array) -> states``."""
    from core.models.batching import fixed_shape_batches, padded_batch
    from core.models.encoders import MAX_SEQ_LEN, mean_pooled, minilm_tokenizer
    ids = minilm_tokenizer()(list(texts), truncation=True, max_length=MAX_SEQ_LEN)["input_ids"]
    out = [None] * len(ids)
    for idx, length in fixed_shape_batches([len(x) for x in ids]):
        x, mask = padded_batch(ids, idx, length)
        h = run_batch(x.numpy(), mask.numpy())
        for j, i in enumerate(idx):
            out[i] = mean_pooled(h[j, :len(ids[i])], ids[i])
    return np.stack(out)


def timed(texts, run_batch) -> tuple[np.ndarray, float]:
    vectors(texts[:64], run_batch)  # warm-up
    t = time.perf_counter()
    v = vectors(texts, run_batch)
    return v, len(texts) / (time.perf_counter() - t)


def neighbours(v: np.ndarray, queries: np.ndarray, k: int = 15) -> list[set]:
    sims = v[queries] @ v.T
    sims[np.arange(len(queries)), queries] = -np.inf
    return [set(np.argpartition(-row, k)[:k]) for row in sims]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    import torch

    from core.models.encoders import minilm_model
    torch.set_num_threads(a.threads)
    texts = list(dict.fromkeys(e.response for e in sample_examples(a.n + 200)))[:a.n]
    model = minilm_model()
    torch.set_num_threads(a.threads)

    def torch_runner(m):
        def run(x, mask):
            with torch.inference_mode():
                h = m(input_ids=torch.from_numpy(x), attention_mask=torch.from_numpy(mask)).last_hidden_state
                return h.float().numpy()
        return run

    rng = np.random.default_rng(13)
    queries = rng.choice(len(texts), size=min(200, len(texts)), replace=False)
    ref: dict = {}
    rows = []

    def measure(name, run) -> None:
        v, rate = timed(texts, run)
        if not ref:
            ref.update(vectors=v, neighbours=neighbours(v, queries), rate=rate)
        cos = np.sum(v * ref["vectors"], 1)
        same = np.mean([a_ == b_ for a_, b_ in zip(neighbours(v, queries), ref["neighbours"])])
        rows.append(f"| {name} | {rate:,.0f} | {rate / ref['rate']:.2f} | {np.abs(v - ref['vectors']).max():.2e} | "
                    f"{cos.mean():.4f} | {cos.min():.4f} | {same:.3f} |")
        print(rows[-1], file=sys.stderr, flush=True)

    # torch first: exporting to ONNX (below) left torch's own attention giving other numbers in this process
    measure("torch float32 (shipped)", torch_runner(model))
    from core.models.encoders import encode
    shipped = np.array_equal(encode(texts, remember=False), ref["vectors"])
    measure("torch int8 dynamic", torch_runner(torch.ao.quantization.quantize_dynamic(
        model, {torch.nn.Linear}, dtype=torch.qint8)))
    measure("torch bfloat16", torch_runner(copy.deepcopy(model).to(torch.bfloat16)))
    try:
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic

        class States(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, input_ids, attention_mask):
                return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

        tmp = Path(tempfile.mkdtemp())
        f32, i8 = tmp / "minilm.onnx", tmp / "minilm-int8.onnx"
        # a padded row in the example batch: with an all-ones mask the traced graph would drop the mask
        dummy = (torch.ones(2, 8, dtype=torch.long), torch.tensor([[1] * 8, [1] * 5 + [0] * 3], dtype=torch.long))
        torch.onnx.export(States(model), dummy, str(f32), input_names=["input_ids", "attention_mask"],
                          output_names=["states"], opset_version=17, dynamo=False,
                          dynamic_axes={"input_ids": {0: "b", 1: "t"}, "attention_mask": {0: "b", 1: "t"},
                                        "states": {0: "b", 1: "t"}})
        quantize_dynamic(str(f32), str(i8), weight_type=QuantType.QInt8)

        def ort_runner(path):
            so = ort.SessionOptions()
            so.intra_op_num_threads = a.threads
            so.inter_op_num_threads = 1
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
            return lambda x, mask: sess.run(None, {"input_ids": x, "attention_mask": mask})[0]
        measure("ORT float32", ort_runner(f32))
        measure("ORT int8 dynamic", ort_runner(i8))
        note = f"onnxruntime {ort.__version__}"
    except ImportError as e:
        note = f"ONNX Runtime rows skipped ({e})"
    print("\n".join([
        f"MiniLM sentence vectors of {len(texts):,} chitchat replies, {a.threads} threads, torch {torch.__version__}, "
        f"{note}; the first row equals core.models.encoders.encode: {'yes' if shipped else 'NO'}.", "",
        "| runtime | texts/s | speed vs shipped | max abs diff | mean cosine | min cosine | same top-15 (200 queries) |",
        "|---|---:|---:|---:|---:|---:|---:|", *rows]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
