"""Write checkpoints/chitchat-idf.json.gz: the word counts behind MME's TCM keywords (``core.models.mme_models``).

    python scripts/build_chitchat_idf.py        # a few seconds

Counts, over the utterances of chitchat-dataset's training conversations (MIT), how many hold each word, and
records the corpus file's SHA-256 and the counting code's fingerprint: ``chitchat_idf`` uses the file only for
that corpus and that code, and counts afresh otherwise. The output is byte-identical from run to run (keys
sorted, gzip without a timestamp).
"""
import hashlib
from importlib.metadata import version

from core.models.mme_models import SHIPPED_IDF, chitchat_document_frequencies, idf_code_fingerprint
from core.models.retrieval import chitchat_corpus_file
from core.outputs import write_json_gz
from core.settings import writable_checkpoint_dir


def main() -> None:
    data = chitchat_corpus_file()
    n, df = chitchat_document_frequencies()
    record = {"utterances": n, "words": len(df), "corpus_sha256": hashlib.sha256(data.read_bytes()).hexdigest(),
              "code": idf_code_fingerprint(),
              "corpus": f"chitchat-dataset=={version('chitchat-dataset')} (MIT), {data.name}, training conversations",
              "made_by": "python scripts/build_chitchat_idf.py", "df": df}
    out = writable_checkpoint_dir() / SHIPPED_IDF
    write_json_gz(out, record)
    print(f"{n} utterances, {len(df)} words: wrote {out} ({out.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
