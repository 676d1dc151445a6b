"""The packaged red-team probes against the naive and the hardened example applications of
``examples/redteam_apps.py`` (no model), compared probe by probe.

Usage:
    python benchmarks/redteam_probes.py [--out benchmarks/results]

Writes ``redteam.json`` and ``redteam.md`` into --out/redteam/.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from ragmeter.decide.redteam import builtin_probes, compare_probes, run_probes, write_probe_report

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
import redteam_apps  # noqa: E402  (the examples folder is not a package)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    probes = builtin_probes(redteam_apps.MARKER)
    naive, hardened = (asyncio.run(run_probes(app, probes)) for app in (redteam_apps.naive, redteam_apps.hardened))
    for path in write_probe_report(compare_probes(naive, hardened, "naive", "hardened"), args.out / "redteam"):
        print(path)
    print((args.out / "redteam" / "redteam.md").read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
