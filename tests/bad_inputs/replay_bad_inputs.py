#!/usr/bin/env python3
"""Replay the bad-input corpus (tests/data/bad_inputs, made by tools/make_bad_inputs.py) against the
overlap-sim binary and check, for every entry:
  - exit status 2 (a usage or input error), or the manifest's `exit` (1: one scheme of several FAILED
    in its row, the others reported; 0: an input that runs with a warning, whose stderr is checked for
    its size); never a signal;
  - stderr names the file (or the flag) the entry broke, and the key when the manifest gives one
    (the full dotted path, or its parent path and its last part; list indices as `.N` or `[N]`);
  - no sanitizer report on stderr;
  - it ends within --timeout seconds, four times that for a sanitized binary (a hang guard, not a
    performance assertion);
  - what the entry's `keep` lists is as it was (an output never replaces a pipe, a link, a directory,
    a device or an input of the command, and a refused command writes nothing), after the entry's
    `setup` made it;
  - stderr is at most the entry's `max_stderr_bytes` (messages stay bounded whatever the input holds);
  - under the entry's `limit_as_kb` (an address-space limit, ulimit -v) it still ends with its exit
    status and message (running out of memory is a message); such entries are skipped for a binary
    built with AddressSanitizer, whose shadow memory needs terabytes of address space.
`{repeat:TEXT:N}` in an argument or a written file stands for TEXT written N times.
Entries run in parallel, each in its own scratch directory (outputs land there). Prints every
failing entry with the reason and the first lines of its stderr; exit status 1 if any failed.

Usage: replay_bad_inputs.py --binary build/tools/overlap-sim [--corpus DIR] [--jobs N] [--timeout S]
                            [--only SUBSTRING] [--sample K] [--json FAILURES.json]
--sample K replays every K-th entry of the manifest (its 1st, (K+1)th, ...): the sanitizer build's
pass, where each process costs several times a release one; the release build replays them all.
The manifest lists entries block by block, so every block keeps about 1/K of its entries, and the
first entry of every class the stride misses is replayed too: each class of bad input is checked
under the sanitizers.
"""
import argparse
import concurrent.futures
import json
import os
import re
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "UndefinedBehaviorSanitizer",
                   "ERROR: ThreadSanitizer", "AddressSanitizer:DEADLYSIGNAL")


def names_key(stderr, key):
    """True when stderr names `key` (a dotted path): whole, or its parent path and its last part."""
    text = re.sub(r"\[(\d+)\]", r".\1", stderr)
    if key in text:
        return True
    parent, _, leaf = key.rpartition(".")
    return bool(parent) and parent in text and leaf in text


def expand(text):
    """`{repeat:TEXT:N}` -> TEXT * N (long inputs without a long manifest)."""
    return re.sub(r"\{repeat:([^:{}]*):(\d+)\}", lambda m: m.group(1) * int(m.group(2)), text)


def uses_asan(binary):
    with open(binary, "rb") as f:
        return b"__asan_init" in f.read()


def check(entry, binary, corpus, timeout, asan=False):
    if entry.get("limit_as_kb") and asan:
        return {"id": entry["id"], "class": entry["class"], "argv": entry["argv"], "rc": None, "seconds": 0.0,
                "problems": [], "stderr": "", "skipped": True}
    with tempfile.TemporaryDirectory(prefix="bad-input-") as tmp:
        subst = {"{file}": os.path.join(corpus, entry["file"]) if "file" in entry else "", "{src}": SRC, "{tmp}": tmp}
        argv = [binary]
        for a in entry["argv"]:
            for k, v in subst.items():
                a = a.replace(k, v)
            argv.append(expand(a))
        for step in entry.get("setup", []):
            step = [x.replace("{src}", SRC) for x in step]
            target = os.path.join(tmp, step[-1])
            if step[0] == "write":
                with open(os.path.join(tmp, step[1]), "w") as f:
                    f.write(expand(step[2]))
            elif step[0] == "copy":
                shutil.copyfile(step[1], target)
            elif step[0] == "hardlink":
                os.link(os.path.join(tmp, step[1]), target)
            elif step[0] == "mkdir":
                os.makedirs(target, exist_ok=True)
            elif step[0] == "mkfifo":
                os.mkfifo(target)
            elif step[0] == "symlink":
                os.symlink(step[1], target)
            elif step[0] == "remove":
                os.remove(target)
            elif step[0] == "copytree":
                shutil.copytree(step[1], target, symlinks=True)
        limit = entry.get("limit_as_kb")

        def set_limit():
            if limit:
                resource.setrlimit(resource.RLIMIT_AS, (limit * 1024, limit * 1024))

        start = time.monotonic()
        try:
            p = subprocess.run(argv, cwd=tmp, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, timeout=timeout, preexec_fn=set_limit if limit else None)
            rc, err = p.returncode, p.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired as e:
            rc, err = None, (e.stderr or b"").decode(errors="replace")
        seconds = time.monotonic() - start
        kept = []
        for k in entry.get("keep", []):
            path = os.path.join(tmp, k["path"])
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                kept.append(f"{k['path']} is gone")
                continue
            want = {"fifo": stat.S_ISFIFO, "symlink": stat.S_ISLNK, "dir": stat.S_ISDIR, "char": stat.S_ISCHR}
            if "type" in k and not want[k["type"]](mode):
                kept.append(f"{k['path']} is no longer a {k['type']}")
            if "text" in k:
                with open(path) as f:
                    if f.read() != expand(k["text"]):
                        kept.append(f"{k['path']} was overwritten")
            if "same_as" in k:
                with open(path, "rb") as f, open(k["same_as"].replace("{src}", SRC), "rb") as g:
                    if f.read() != g.read():
                        kept.append(f"{k['path']} was overwritten")
    problems = list(kept)
    if rc is None:
        problems.append(f"no exit within {timeout:g} s (hang guard)")
    elif rc not in (entry.get("exit", 2) if isinstance(entry.get("exit", 2), list) else [entry.get("exit", 2)]):
        problems.append(f"exit status {rc} (want {entry.get('exit', 2)})")
    if any(m in err for m in SANITIZER_MARKS):
        problems.append("sanitizer report")
    if "max_stderr_bytes" in entry and len(err.encode()) > entry["max_stderr_bytes"]:
        problems.append(f"stderr is {len(err.encode())} bytes (at most {entry['max_stderr_bytes']})")
    if rc is not None and (rc != 0 or entry.get("exit") == 0):  # (an unwanted exit 0 already failed)
        where = entry["where"]
        if where not in err:
            problems.append(f"stderr does not name {where!r}")
        if entry.get("key") and not names_key(err, entry["key"]):
            problems.append(f"stderr does not name the key {entry['key']!r}")
    return {"id": entry["id"], "class": entry["class"], "argv": entry["argv"], "rc": rc, "seconds": round(seconds, 3),
            "problems": problems, "stderr": err[-2000:]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", required=True)
    ap.add_argument("--corpus", default=os.path.join(SRC, "tests", "data", "bad_inputs"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=float, default=5.0)
    ap.add_argument("--only", default="", help="run the entries whose id contains this")
    ap.add_argument("--json", default="", help="write every result (failing or not) to this file")
    ap.add_argument("--sample", type=int, default=1, help="replay every K-th entry of the manifest (K >= 1)")
    args = ap.parse_args()
    if args.sample < 1:
        ap.error("--sample must be at least 1")
    # Entries run in a scratch directory: a corpus given relative to here must still resolve there.
    args.corpus = os.path.abspath(args.corpus)

    with open(os.path.join(args.corpus, "manifest.json")) as f:
        entries = json.load(f)["entries"]
    picked = {i for i in range(len(entries)) if i % args.sample == 0}
    covered = {entries[i]["class"] for i in picked}
    for i, e in enumerate(entries):
        if e["class"] not in covered:
            picked.add(i)
            covered.add(e["class"])
    entries = [e for i, e in enumerate(entries) if i in picked and args.only in e["id"]]
    binary = os.path.abspath(args.binary)
    asan = uses_asan(binary)
    # A sanitized process runs several times slower (the 16 MiB-token trace entry: 0.6 s in release,
    # over 5 s under ASan + UBSan on two loaded cores): the hang guard stretches with it, and still
    # catches a hang.
    timeout = args.timeout * (4 if asan else 1)
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda e: check(e, binary, args.corpus, timeout, asan), entries))
    skipped = [r for r in results if r.get("skipped")]
    results = [r for r in results if not r.get("skipped")]
    wall = time.monotonic() - start
    failed = [r for r in results if r["problems"]]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    for r in failed:
        first = " | ".join(r["stderr"].strip().splitlines()[:2])[:300]
        print(f"FAIL {r['id']} [{r['class']}] rc={r['rc']} {r['seconds']:.2f}s: {'; '.join(r['problems'])}")
        print(f"     argv: {' '.join(r['argv'])}")
        print(f"     stderr: {first}")
    by_class = {}
    for r in results:
        c = by_class.setdefault(r["class"], [0, 0])
        c[0] += 1
        c[1] += bool(r["problems"])
    print("class                 entries  failing")
    for c, (n, bad) in sorted(by_class.items()):
        print(f"{c:<22}{n:>8}{bad:>9}")
    slowest = max(results, key=lambda r: r["seconds"]) if results else None
    if skipped:
        print(f"{len(skipped)} entries under a memory limit skipped (AddressSanitizer build): "
              + ", ".join(r["id"] for r in skipped))
    sampled = f" (1 in {args.sample} of the manifest)" if args.sample > 1 else ""
    print(f"{len(results)} entries{sampled}, {len(failed)} failing, {wall:.1f} s wall with {args.jobs} jobs"
          + (f"; slowest {slowest['id']} {slowest['seconds']:.2f} s" if slowest else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
