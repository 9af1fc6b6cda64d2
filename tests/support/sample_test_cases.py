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
import subprocess
import sys
import tempfile


def list_cases(binary: str, spec: str) -> list[str]:
    out = subprocess.run([binary, "--list-test-names-only", spec], check=True, capture_output=True,
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
    # Catch2 v2 reads a test list file line by line, one name per line, each taken as a quoted name,
    # so names with commas or brackets need no escaping. A name Catch2 could not take that way (a
    # double quote, or a leading '#', which marks a comment line) runs whatever the sample says.
    chosen = [c for i, c in enumerate(cases) if i % args.every == args.offset % args.every]
    unsafe = [c for c in cases if '"' in c or c.startswith("#")]
    chosen += [c for c in unsafe if c not in chosen]
    print(f"sample_test_cases.py: {len(chosen)} of the {len(cases)} cases of {args.spec} "
          f"(one in {args.every}, from case {args.offset % args.every})", flush=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("".join(c + "\n" for c in chosen if c not in unsafe))
        listing = f.name
    try:
        command = [args.binary, "-f", listing, "-w", "NoTests"]
        command += [f'"{c}"' for c in chosen if c in unsafe]
        return subprocess.run(command).returncode
    finally:
        os.unlink(listing)


if __name__ == "__main__":
    sys.exit(main())
