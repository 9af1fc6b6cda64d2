#!/usr/bin/env python3
"""Run one test case in N of a Catch2 test spec: the sanitizer build's share of its slowest test files.

The release build runs every case of these files; under AddressSanitizer + UndefinedBehaviorSanitizer
each case (a whole simulation through the command line) costs several times as much, and the same code
paths repeat from case to case. The sanitizer build therefore runs cases OFFSET, OFFSET + N, ... of the
spec's cases in declaration order (tests/CMakeLists.txt, OVERLAP_SANITIZER_SAMPLED_FILES). OFFSET is
fixed at configure time from the commit count, so a run is reproducible for its commit and N landings
in a row cover every case.

Exit status: the test binary's, or 2 when the spec lists no case (a renamed file, a tag typo).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def list_cases(binary: str, spec: str) -> list[str]:
    # -#: every case tagged with its file's name ([#stem]), as tests/CMakeLists.txt registers them.
    # Catch2 v2's listings exit with the number of cases listed, so the status says nothing here.
    out = subprocess.run([binary, "-#", "--list-test-names-only", spec], capture_output=True,
                         text=True).stdout
    return [line.strip() for line in out.splitlines() if line.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True, help="the Catch2 test program")
    parser.add_argument("--spec", required=True, help="the Catch2 test spec whose cases are sampled")
    parser.add_argument("--every", type=int, default=3, help="run one case in EVERY (default 3)")
    parser.add_argument("--offset", type=int, default=0, help="the first case run, modulo EVERY")
    args = parser.parse_args()
    if args.every < 1:
        parser.error("--every must be at least 1")
    cases = list_cases(args.binary, args.spec)
    if not cases:
        print(f"sample_test_cases.py: no test case matches {args.spec}", file=sys.stderr)
        return 2
    # Catch2 v2 reads a test list file line by line, each line one name taken as quoted; a comma
    # inside it must still be escaped (else the name splits in two and matches every case), and so
    # must a backslash.
    chosen = [c for i, c in enumerate(cases) if i % args.every == args.offset % args.every]
    print(f"sample_test_cases.py: {len(chosen)} of the {len(cases)} cases of {args.spec} "
          f"(one in {args.every}, from case {args.offset % args.every})", flush=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("".join(c.replace("\\", "\\\\").replace(",", "\\,") + "\n" for c in chosen))
        listing = f.name
    try:
        run = subprocess.run([args.binary, "-#", "-f", listing, "-w", "NoTests"], capture_output=True,
                             text=True)
    finally:
        os.unlink(listing)
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    if run.returncode != 0:
        return run.returncode
    # A name the list file could not carry (a character Catch2's test spec treats specially) would
    # match no case or every case: the count of cases run must be the count chosen.
    ran = re.findall(r"in (\d+) test cases?\)", run.stdout)
    if not ran or int(ran[-1]) != len(chosen):
        print(f"sample_test_cases.py: chose {len(chosen)} cases but Catch2 ran "
              f"{ran[-1] if ran else 'an unknown number'}", file=sys.stderr)
        return 1
    return 0

if __name__ == "__main__":
    sys.exit(main())
