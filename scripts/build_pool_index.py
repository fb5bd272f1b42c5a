"""Build the shipped embedding index of the default chitchat pool (product-quantized, checkpoints/).

    python scripts/build_pool_index.py

Encodes every distinct turn of chitchat-dataset with all-MiniLM-L6-v2 and writes
checkpoints/pool-chitchat-<hash>-<encoder>.faiss (faiss IndexPQ, 128 bytes a vector). The float16
embeddings also land in the user cache so this machine can use the exact vectors.
"""
import argparse

from tqdm import tqdm

from core.models.retrieval import chitchat_pool, index_name, pool_embeddings, save_pq_index
from core.settings import checkpoint_dir, use_float32_encodings


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    use_float32_encodings("scripts/build_pool_index.py")  # the numbers it records are float32's
    pool = chitchat_pool()
    bar = tqdm(total=len(pool.texts), desc="encoding chitchat turns", unit="turn")

    def progress(done, total, desc):
        bar.n = done
        bar.refresh()

    vecs, source = pool_embeddings(pool, progress)
    bar.close()
    out = checkpoint_dir() / f"{index_name(pool)}.faiss"
    # quantize from the float16 values the cache holds, so a rebuild gives the same index either way
    save_pq_index(vecs.astype("float16").astype("float32"), out)
    print(f"{len(pool)} pairs, {len(pool.texts)} texts, embeddings from {source}; wrote {out} "
          f"({out.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
