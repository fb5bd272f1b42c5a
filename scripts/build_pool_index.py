"""Build the shipped embedding index of the default chitchat pool (product-quantized, checkpoints/) and the
pool's key.

    python scripts/build_pool_index.py              # the index and the key (encoding takes ~20 min on 2 cores)
    python scripts/build_pool_index.py --key-only   # only checkpoints/pool-chitchat.json (a few seconds)

Encodes every distinct turn of chitchat-dataset with all-MiniLM-L6-v2 and writes
checkpoints/pool-chitchat-<hash>-<encoder>.faiss (faiss IndexPQ, 128 bytes a vector). The float16
embeddings also land in the user cache so this machine can use the exact vectors. The key file
(``core.models.retrieval.SHIPPED_POOL_KEY``) names the pool's key for the corpus file it was built from (its
SHA-256), so a signature never builds the pool to learn it (``core.models.retrieval.pool_key``).
"""
import argparse
import hashlib
import json
from importlib.metadata import version

from tqdm import tqdm

from core.models.retrieval import (SHIPPED_POOL_KEY, chitchat_corpus_file, chitchat_pool, index_name,
                                   pool_code_fingerprint, pool_embeddings, save_pq_index)
from core.outputs import write_text
from core.settings import use_float32_encodings, writable_checkpoint_dir


def write_pool_key() -> None:
    pool = chitchat_pool()
    data = chitchat_corpus_file()
    out = writable_checkpoint_dir() / SHIPPED_POOL_KEY
    corpus = f"chitchat-dataset=={version('chitchat-dataset')} (MIT), {data.name}"
    write_text(out, json.dumps({"key": pool.key, "corpus_sha256": hashlib.sha256(data.read_bytes()).hexdigest(),
                                "code": pool_code_fingerprint(), "corpus": corpus, "pairs": len(pool),
                                "texts": len(pool.texts), "made_by": "python scripts/build_pool_index.py"},
                               indent=1) + "\n")
    print(f"{pool.key}: wrote {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--key-only", action="store_true", help="write only the pool's key file")
    args = ap.parse_args()
    write_pool_key()
    if args.key_only:
        return
    use_float32_encodings("scripts/build_pool_index.py")  # the numbers it records are float32's
    pool = chitchat_pool()
    bar = tqdm(total=len(pool.texts), desc="encoding chitchat turns", unit="turn")

    def progress(done, total, desc):
        bar.n = done
        bar.refresh()

    vecs, source = pool_embeddings(pool, progress)
    bar.close()
    out = writable_checkpoint_dir() / f"{index_name(pool)}.faiss"
    # quantize from the float16 values the cache holds, so a rebuild gives the same index either way
    save_pq_index(vecs.astype("float16").astype("float32"), out)
    print(f"{len(pool)} pairs, {len(pool.texts)} texts, embeddings from {source}; wrote {out} "
          f"({out.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
