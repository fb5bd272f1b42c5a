"""Build the shipped embedding index of the default chitchat pool (product-quantized, checkpoints/).

    python scripts/build_pool_index.py

Encodes every distinct turn of chitchat-dataset with all-MiniLM-L6-v2 and writes
checkpoints/pool-chitchat-<hash>-<encoder>.faiss (faiss IndexPQ, 128 bytes a vector). The float16
embeddings also land in the user cache so this machine can use the exact vectors.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tqdm import tqdm  # noqa: E402

from core.retrieval import SHIPPED_INDEX_DIR, _index_name, chitchat_pool, pool_embeddings, save_pq_index  # noqa: E402


def main() -> None:
    pool = chitchat_pool()
    bar = tqdm(total=len(pool.texts), desc="encoding chitchat turns", unit="turn")

    def progress(done, total, desc):
        bar.n = done
        bar.refresh()

    vecs, source = pool_embeddings(pool, progress)
    bar.close()
    out = SHIPPED_INDEX_DIR / f"{_index_name(pool)}.faiss"
    # quantize from the float16 values the cache holds, so a rebuild gives the same index either way
    save_pq_index(vecs.astype("float16").astype("float32"), out)
    print(f"{len(pool)} pairs, {len(pool.texts)} texts, embeddings from {source}; wrote {out} "
          f"({out.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
