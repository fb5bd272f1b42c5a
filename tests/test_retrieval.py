"""Retrieval finds the expected neighbour on a small pool; the leakage guard drops the test pair."""
import numpy as np
import pytest

from core.models import retrieval
from core.models.retrieval import Pool, Retriever, load_pool, normalize

PAIRS = [
    ("what is your favorite food ?", "i love pizza with extra cheese"),
    ("do you have any pets ?", "yes , two cats and a dog"),
    ("where do you live ?", "i live in a small town near the coast"),
    ("what do you do for work ?", "i am a nurse at the local hospital"),
    ("what kind of music do you like ?", "mostly jazz and some classical"),
    ("how was your weekend ?", "great , we went hiking in the mountains"),
    ("Do you have any pets?", "No pets, I'm allergic"),
]


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DIALEVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DIALEVAL_CHECKPOINTS", str(tmp_path / "none"))  # no shipped index either


@pytest.mark.parametrize("method", ["emb-u", "bm25-u"])
def test_expected_neighbour(method):
    r = Retriever(Pool.from_pairs("toy", PAIRS), method)
    hits = r.retrieve(["what food is your favorite ?", "any pets at home ?"], k=2)
    assert hits[0][0].response == "i love pizza with extra cheese"
    assert all("pets" in h.utterance.lower() for h in hits[1])
    assert all(hits[0][i].similarity >= hits[0][i + 1].similarity for i in range(len(hits[0]) - 1))


@pytest.mark.parametrize("method", ["emb-ur", "bm25-ur"])
def test_utterance_and_response_uses_the_reference(method):
    r = Retriever(Pool.from_pairs("toy", PAIRS), method)
    # both pet pairs match the utterance; the reference decides which comes first
    hits = r.retrieve(["do you have pets ?"], ["no , i am allergic to cats"], k=2)
    assert hits[0][0].response == "No pets, I'm allergic"


@pytest.mark.parametrize("method", ["emb-u", "bm25-u", "emb-ur"])
def test_leakage_guard(method):
    r = Retriever(Pool.from_pairs("toy", PAIRS), method)
    hits = r.retrieve(["where do you live ?"], ["I live in a small town near the coast!"], k=6)[0]
    assert all(normalize(h.response) != "i live in a small town near the coast" for h in hits)
    # without a reference nothing is excluded
    assert r.retrieve(["where do you live ?"], k=1)[0][0].response == "i live in a small town near the coast"


def test_duplicate_responses_kept_once():
    pool = Pool.from_pairs("dup", [("hi", "hello"), ("hi !", "Hello."), ("hey", "hello"), ("yo", "sup")])
    hits = Retriever(pool, "bm25-u").retrieve(["hi"], k=5)[0]
    assert len({normalize(h.response) for h in hits}) == len(hits)


def test_index_cached_on_disk_by_content(tmp_path):
    pool = Pool.from_pairs("toy", PAIRS)
    v1, src1 = retrieval.pool_embeddings(pool)
    v2, src2 = retrieval.pool_embeddings(pool)
    assert (src1, src2) == ("built", "cache") and np.array_equal(v1, v2)  # the first run gives the cached numbers
    other = Pool.from_pairs("toy", PAIRS[:-1])
    assert other.content_hash != pool.content_hash and retrieval.pool_embeddings(other)[1] == "built"


def test_a_pool_index_is_cached_only_from_reproducible_products(monkeypatch):
    """The cache file names how its vectors were computed (MKL's reproducible mode): a file of the name used
    before 0.6.2 is never read, and a process whose MKL is not in that mode builds without caching."""
    import core.models.blas as blas
    from core.settings import cache_dir
    pool = Pool.from_pairs("toy", PAIRS)
    np.save(cache_dir() / f"{retrieval.index_name(pool)}.npy", np.zeros((len(pool.texts), 384), np.float16))
    built, src = retrieval.pool_embeddings(pool)
    assert src == "built" and np.abs(built).sum() > 0  # not the old file's zeros
    assert retrieval.cached_index_path(pool).name.endswith(f"-{retrieval.BUILT_VECTORS}.npy")
    other = Pool.from_pairs("toy", PAIRS[:-1])
    monkeypatch.setattr(blas, "reproducible_products", lambda: False)
    assert [retrieval.pool_embeddings(other)[1] for _ in range(2)] == ["built", "built"]
    assert retrieval.index_location(other) is None


def test_exact_search_does_not_depend_on_batch_or_threads():
    """Grid search: a query's neighbours and similarities are bit-identical alone, in any batch and on any
    thread count, and agree with float search up to the grid's rounding (ties go to the lower index)."""
    import torch
    rng = np.random.default_rng(3)
    db = rng.normal(size=(5000, 384)).astype(np.float32)
    db /= np.linalg.norm(db, axis=1, keepdims=True)
    db[10] = db[20]  # a tie
    q = db[rng.choice(5000, 300, replace=False)] + 0.3 * rng.normal(size=(300, 384)).astype(np.float32)
    q = (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)
    q[0] = db[10]
    grid = torch.from_numpy(retrieval.on_grid(db))
    sims, cand = retrieval.grid_search(grid, q, 40)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        for j in (0, 1, 150, 299):
            s1, c1 = retrieval.grid_search(grid, q[j:j + 1], 40)
            assert np.array_equal(s1[0], sims[j]) and np.array_equal(c1[0], cand[j])
    finally:
        torch.set_num_threads(before)
    s2, c2 = retrieval.grid_search(grid, q[::-1].copy(), 40)
    assert np.array_equal(s2[::-1], sims) and np.array_equal(c2[::-1], cand)
    assert list(cand[0][:2]) == [10, 20] and sims[0][0] == sims[0][1]
    exact = q @ db.T
    assert np.abs(np.take_along_axis(exact, cand, 1) - sims).max() < 1e-3
    assert np.all(np.diff(sims, axis=1) <= 0)
    top1 = exact.argmax(1)
    assert np.mean(cand[:, 0] == top1) > 0.98


@pytest.mark.slow  # trains a product quantizer on 3,000 vectors: ~6-10 s
def test_pq_roundtrip(tmp_path):
    rng = np.random.default_rng(0)
    v = rng.normal(size=(3000, 384)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    retrieval.save_pq_index(v, tmp_path / "x.faiss", m=64)
    back = retrieval.load_pq_vectors(tmp_path / "x.faiss")
    cos = (back * v).sum(1)
    assert back.shape == v.shape and np.median(cos) > 0.75


def test_pool_vectors_are_normalized_a_block_at_a_time_to_the_same_bits(tmp_path, monkeypatch):
    """load_pq_vectors divides by np.linalg.norm's per-row sums a block of rows at a time (no pool-sized
    temporary): the vectors must be the same bits as one np.linalg.norm over all rows, whatever the block."""
    import faiss
    rng = np.random.default_rng(1)
    v = rng.normal(size=(2000, 384)).astype(np.float32)
    retrieval.save_pq_index(v / np.linalg.norm(v, axis=1, keepdims=True), tmp_path / "x.faiss", m=32)
    decoded = faiss.read_index(str(tmp_path / "x.faiss")).reconstruct_n(0, 2000)
    expected = (decoded / np.linalg.norm(decoded, axis=1, keepdims=True).clip(1e-8)).astype(np.float32)
    for rows in (7, 8192):
        monkeypatch.setattr(retrieval, "NORM_ROWS", rows)
        got = retrieval.load_pq_vectors(tmp_path / "x.faiss")
        assert got.dtype == np.float32 and np.array_equal(got, expected)


def test_on_grid_overwrites_only_when_asked_and_gives_the_same_numbers():
    rng = np.random.default_rng(2)
    v = rng.normal(size=(50, 384))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    expected = np.rint(v.astype(np.float32) * retrieval.SIM_SCALE).astype(np.float32)  # the definition
    v32 = v.astype(np.float32)
    kept = v32.copy()
    assert np.array_equal(retrieval.on_grid(v32), expected) and np.array_equal(v32, kept)  # input untouched
    assert np.array_equal(retrieval.on_grid(v), expected)  # float64 input: converted first, as before
    assert np.array_equal(retrieval.on_grid(v, overwrite=True), expected) and v.dtype == np.float64
    out = retrieval.on_grid(v32, overwrite=True)
    assert out is v32 and np.array_equal(out, expected)


def test_pool_files(tmp_path):
    (tmp_path / "p.jsonl").write_text('{"utterance": "a?", "response": "b."}\n{"context": ["x", "c?"], "response": "d."}\n')
    pool = load_pool(tmp_path / "p.jsonl")
    assert len(pool) == 2 and pool.utterance(1) == "c?" and pool.response(1) == "d."
    (tmp_path / "dd.txt").write_text("Hi . __eou__ Hello ! __eou__ How are you ? __eou__\nA __eou__ B __eou__\n")
    dd = load_pool(tmp_path / "dd.txt")
    assert len(dd) == 3 and dd.utterance(1) == "Hello !" and dd.response(1) == "How are you ?"


def test_chitchat_default_pool():
    pool = retrieval.chitchat_pool()
    # 7,168 conversations; one has a single turn and gives no pair
    assert len(pool) > 130_000 and 7100 < pool.conv_id.max() + 1 <= 7168
    assert isinstance(pool.utterance(0), str) and pool.utterance(1) == pool.response(0)


def test_the_shipped_pool_key_is_the_built_pools(monkeypatch, tmp_path):
    """The default pool's key ships (checkpoints/pool-chitchat.json) so a signature never builds the pool; it must
    be the key of the pool built from the installed corpus (else: python scripts/build_pool_index.py --key-only),
    and with an empty cache folder pool_key() reads it without building the pool."""
    data = retrieval.chitchat_corpus_file()
    assert retrieval.shipped_pool_key(data) == retrieval.chitchat_pool().key, \
        "stale checkpoints/pool-chitchat.json: run python scripts/build_pool_index.py --key-only"
    monkeypatch.setenv("DIALEVAL_CACHE", str(tmp_path))
    monkeypatch.setattr(retrieval, "_POOL_KEYS", {})  # nothing known in this process either

    def no_building(*_a, **_k):
        raise AssertionError("pool_key built the pool")

    monkeypatch.setattr(retrieval, "get_pool", no_building)
    assert retrieval.pool_key(None) == retrieval.chitchat_pool().key
    assert (tmp_path / "pool-keys.json").exists()  # remembered: the next process does not even hash the file


def test_a_shipped_pool_key_is_not_used_for_another_corpus_or_other_code(monkeypatch, tmp_path):
    other = tmp_path / "dataset.json"
    other.write_text("{}")
    assert retrieval.shipped_pool_key(other) is None
    monkeypatch.setattr(retrieval, "pool_code_fingerprint", lambda: "changed-code")
    assert retrieval.shipped_pool_key(retrieval.chitchat_corpus_file()) is None
    # then the key is computed from the pool itself
    monkeypatch.setenv("DIALEVAL_CACHE", str(tmp_path))
    monkeypatch.setattr(retrieval, "_POOL_KEYS", {})
    assert retrieval.pool_key(None) == retrieval.chitchat_pool().key
