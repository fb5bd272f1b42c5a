"""A real OpenAI-compatible endpoint on this machine, offline: ``transformers serve`` (``transformers[serving]``)
with the shipped SmolLM2-135M-Instruct, for trying the ``llm`` judge without an account, for its tests and for
its benchmark. SmolLM2 is far too small to be a good judge (docs/judge.md, "The llm judge"); this serves to show
the machinery, or a bigger local model folder when one is given.

    python -m core.judges.local_server            # serves SmolLM2 on 127.0.0.1:8000 until Ctrl-C
    dialeval compare a.jsonl b.jsonl --judge llm --llm-url http://127.0.0.1:8000/v1 --llm-model <the folder it prints>
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

START_TIMEOUT = 180.0


def smollm_model_folder() -> Path:
    """A folder ``transformers serve`` loads: the dequantized SmolLM2 (``core.models.encoders.smollm``, made on
    first use) linked file by file, with a config naming its architecture (the dequantized config has none)."""
    from core.models.encoders import smollm, smollm_converted_dir
    converted = smollm_converted_dir()
    if not (converted / "complete").exists():
        smollm()
    folder = converted.with_name(converted.name + "-served")
    if (folder / "config.json").exists():
        return folder
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    for f in converted.iterdir():
        if f.name not in ("config.json", "complete") and not (tmp / f.name).exists():
            (tmp / f.name).symlink_to(f)
    config = json.loads((converted / "config.json").read_text())
    config["architectures"] = config.get("architectures") or ["LlamaForCausalLM"]
    (tmp / "config.json").write_text(json.dumps(config))
    try:
        tmp.rename(folder)
    except OSError:  # another process made it first
        pass
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_in_use(port: int) -> bool:
    """Whether something on 127.0.0.1 holds ``port`` already (then a server started there would fail to bind,
    and another's ``/health`` would answer for it)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds: a port in TIME_WAIT is free
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


@contextmanager
def transformers_serve(model_folder: str | os.PathLike, port: int | None = None, log: str | os.PathLike | None = None,
                       timeout: float = START_TIMEOUT) -> Iterator[str]:
    """Run ``transformers serve MODEL_FOLDER`` on 127.0.0.1 (a free port unless given), offline, on the CPU; yield
    its base URL (``http://127.0.0.1:PORT/v1``) once ``/health`` answers; stop it on exit. A server that does
    not start within ``timeout`` seconds raises ``RuntimeError`` with the end of its log; a ``port`` something
    else holds already, at once."""
    if port and port_in_use(port):
        raise RuntimeError(f"port {port} on 127.0.0.1 is in use already (another server?): stop it, or give "
                           "another with --port")
    port = port or free_port()
    serve = Path(sys.executable).with_name("transformers")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    log_path = Path(log) if log else Path(model_folder).parent / f"serve-{port}.log"
    with log_path.open("w") as log_file:
        proc = subprocess.Popen([str(serve), "serve", str(model_folder), "--host", "127.0.0.1", "--port", str(port),
                                 "--device", "cpu"], stdout=log_file, stderr=subprocess.STDOUT, env=env)
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.time() + timeout
            while True:
                try:
                    with urllib.request.urlopen(base + "/health", timeout=2) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"transformers serve did not start: {log_path.read_text()[-2000:]}")
                time.sleep(0.5)
            yield base + "/v1"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="serve SmolLM2 (or --model FOLDER) as an OpenAI-compatible endpoint")
    ap.add_argument("--model", default=None, help="a local model folder (default: the shipped SmolLM2)")
    ap.add_argument("--port", type=int, default=8000)
    a = ap.parse_args(argv)
    if port_in_use(a.port):
        print(f"error: port {a.port} on 127.0.0.1 is in use already (another server?): stop it, or give another "
              "with --port", file=sys.stderr)
        return 2

    def stop(signum, frame):  # SIGTERM (kill, a service manager) stops the model server too, as Ctrl-C does
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)
    print(f"starting transformers serve on 127.0.0.1:{a.port} (about 30 s; up to {START_TIMEOUT:.0f} s, and up to "
          "3 min more on a first run, which makes SmolLM2's copy)...", file=sys.stderr, flush=True)
    try:
        folder = a.model or str(smollm_model_folder())
        with transformers_serve(folder, a.port) as url:
            print(f"serving {folder}\n  --judge llm --llm-url {url} --llm-model {folder}\n(Ctrl-C stops it)",
                  flush=True)
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        pass
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
