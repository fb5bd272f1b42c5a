"""Write checkpoints/rated-sets.json.gz: each development set known by its rows (``core.rated_sets``).

    python scripts/make_rated_set_keys.py        # a few seconds

Reads every human-rated set of ``shared/data/eval`` in place and keeps, per set, the first 4 bytes of the SHA-256
of each row's normalised context and reply (``core.rated_sets.row_key``): enough to recognise the rows under
another name, nothing to read them from. The output is byte-identical from run to run (keys sorted, gzip
without a timestamp).
"""

from core.data import load_jsonl
from core.outputs import write_json_gz
from core.rated_sets import KEY_BYTES, RATED_SET_KEYS, encode_keys, row_key
from core.settings import shared_data_dir, writable_checkpoint_dir


def main() -> None:
    folder = shared_data_dir() / "eval"
    sets, rows = {}, {}
    for path in sorted(folder.glob("*.jsonl")):
        exs = load_jsonl(path)
        sets[path.stem] = encode_keys(row_key(ex.context, ex.response) for ex in exs)
        rows[path.stem] = len(exs)
    record = {"what": f"per development set, the first {KEY_BYTES} bytes of the SHA-256 of each row's normalised "
                      "context and reply (core.rated_sets.row_key), big-endian uint32s in base64: the rows are "
                      "recognised, not stored",
              "data": "the human-rated sets of shared/data/eval (DSTC10 Track 5 development sets and friends; "
                      "shared/data/SOURCES.json names each one's origin and license)",
              "rows": rows, "made_by": "python scripts/make_rated_set_keys.py", "sets": sets}
    out = writable_checkpoint_dir() / RATED_SET_KEYS
    write_json_gz(out, record)
    print(f"{len(sets)} sets, {sum(rows.values())} rows: wrote {out} ({out.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
