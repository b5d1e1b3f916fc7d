"""Regression guard for the round's CPU: this checkout against earlier releases, on one server.

    python benchmarks/bench_check.py [--against 0.2.0 0.1.0] [--runs 2] [--rounds 100] [--limit 1.10]

Each release's code is exported (``git archive``) from the commit ``benchmarks/releases.txt``
names, and its own ``benchmarks/bench_engine.py`` runs against the same PostgreSQL server
(``SUPPORTBOT_DATABASE_URL``'s, else one embedded server started here for all runs), alternating
with this checkout's, ``--runs`` times each: a noisy minute then hits every version alike. The
figure compared is ``round_cpu_ms_median``, this process's CPU per round (process time, not wall),
which the other processes on a shared machine disturb least. Fails (exit 1) when this checkout's
median over runs is more than ``--limit`` times the first release's.

Not a test and not in CI: developers run it (``scripts/bench-check``) before a release.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RELEASES = Path(__file__).resolve().parent / "releases.txt"
FIGURES = ("round_ms_median", "round_cpu_ms_median", "state_ms_warm", "history_ms")


def releases() -> dict[str, str]:
    """version → commit, from releases.txt (``version commit`` per line, ``#`` comments)."""
    found = {}
    for line in RELEASES.read_text().splitlines():
        words = line.split("#", 1)[0].split()
        if words:
            found[words[0]] = words[1]
    return found


def export(commit: str, into: Path) -> Path:
    """The release's tree, as committed, in ``into``."""
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def bench(tree: Path, url: str, rounds: int) -> dict[str, float]:
    """One run of ``tree``'s engine benchmark, one ticket of ``rounds`` rounds, its own package."""
    script = tree / "benchmarks" / "bench_engine.py"
    args = [sys.executable, str(script), "--rounds", str(rounds), "--workers", "0", "--json"]
    if "--threads" in script.read_text():  # 0.1 had no threaded section
        args += ["--threads", "0"]
    # The tree's own package first on the path: an editable install of this checkout must not win.
    env = {**os.environ, "PYTHONPATH": str(tree), "SUPPORTBOT_DATABASE_URL": url}
    out = subprocess.run(args, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{tree.name}: bench_engine failed:\n{out.stderr[-3000:]}")
    row = json.loads(out.stdout)["single_ticket"][0]
    return {key: float(row[key]) for key in FIGURES if key in row}


def server_url(workdir: Path) -> str:
    configured = os.environ.get("SUPPORTBOT_DATABASE_URL")
    if configured:
        return configured
    sys.path.insert(0, str(ROOT))
    from supportbot.store._embedded import embedded_url  # stopped when this process exits

    return embedded_url(workdir / "server", admin=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    known = releases()
    parser.add_argument("--against", nargs="+", default=[list(known)[-1]], help=f"of {', '.join(known)}")
    parser.add_argument("--runs", type=int, default=2, help="runs per version, alternating (default 2)")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--limit", type=float, default=1.10, help="allowed CPU ratio to the first release")
    args = parser.parse_args()
    unknown = [v for v in args.against if v not in known]
    if unknown:
        parser.error(f"no commit for {', '.join(unknown)} in {RELEASES.name}")
    with tempfile.TemporaryDirectory(prefix="supportbot-bench-check-") as tmp:
        work = Path(tmp)
        trees = {"this": ROOT} | {v: export(known[v], work / v) for v in args.against}
        url = server_url(work)
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        for i in range(args.runs):
            for name, tree in trees.items():
                runs[name].append(bench(tree, url, args.rounds))
                cpu = runs[name][-1]["round_cpu_ms_median"]
                print(f"run {i + 1}: {name:6s} {cpu:.2f} ms CPU per round", file=sys.stderr)
    print(f"{'version':8s} " + " ".join(f"{k:>20s}" for k in FIGURES))
    medians: dict[str, dict[str, float]] = {}
    for name, rows in runs.items():
        medians[name] = {k: statistics.median(row[k] for row in rows) for k in FIGURES if k in rows[0]}
        print(f"{name:8s} " + " ".join(f"{medians[name].get(k, float('nan')):20.3f}" for k in FIGURES))
    base = args.against[0]
    ratio = medians["this"]["round_cpu_ms_median"] / medians[base]["round_cpu_ms_median"]
    verdict = "ok" if ratio <= args.limit else "REGRESSION"
    print(f"\nCPU per round, this / {base}: {ratio:.2f} (limit {args.limit:.2f}): {verdict}")
    sys.exit(0 if ratio <= args.limit else 1)


if __name__ == "__main__":
    main()
