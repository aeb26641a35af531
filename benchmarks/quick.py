"""Quick mode of the benchmarks, run by CI after the test suite (needs ../shared/data).

Each entry runs a benchmark script's small configuration into a temporary
folder (so the committed full results in benchmarks/results/ are untouched) and
fails when the script reports a failed check against the reference numbers.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: (script, arguments) pairs; "{tmp}" is replaced by a temporary folder.
QUICK = [
    ("compare_item_level.py", ["--quick", "--out", "{tmp}/baselines_quick.md"]),
]


def main() -> int:
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        for script, args in QUICK:
            cmd = [sys.executable, str(HERE / script), *(a.replace("{tmp}", tmp) for a in args)]
            print(f"$ {' '.join(cmd[1:])}", flush=True)
            t0 = time.perf_counter()
            code = subprocess.call(cmd)
            print(f"  exit {code} after {time.perf_counter() - t0:.0f} s", flush=True)
            if code != 0:
                failed.append(script)
    if failed:
        print(f"quick benchmarks failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    print("quick benchmarks passed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
