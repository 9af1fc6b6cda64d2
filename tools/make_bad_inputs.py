#!/usr/bin/env python3
"""Generate tests/data/bad_inputs/: malformed scenario and profile files and bad CLI invocations.

Every entry is an input overlap-sim must refuse with exit status 2 and a message that names the file
(or flag) and the key at fault. The entries are mutations of the shipped scenarios/ and
scenarios/hardware/ files: out-of-range numbers, wrong types, misspelt keys at every level,
misspelt link classes, truncated and garbled YAML, duplicate keys, empty files, deep nesting, huge
lists, the examples the hardening requirements name (issue_* entries), and bad command lines. The
output is deterministic (a fixed seed): re-running the script reproduces the committed corpus.

manifest.json lists the entries; each has
  id      a unique name (also the file name, when there is a file)
  class   what was done (out_of_range, wrong_type, misspelt_key, ...)
  file    the corpus file, relative to the corpus directory (absent for a pure CLI entry)
  argv    the overlap-sim arguments; {file} is the entry's file, {src} the source tree, {tmp} a
          scratch directory
  where   text stderr must contain: the file's name or the flag
  key     the key path the message must name (dotted, list indices as .N), or null when no single
          key is at fault (unparsable YAML, empty file)
  setup   (optional) what to make in {tmp} before the run: ["write", NAME, TEXT], ["mkdir", NAME],
          ["mkfifo", NAME], ["symlink", TARGET, NAME], ["hardlink", TARGET, NAME], ["copy", SOURCE, NAME],
          ["copytree", SOURCE, NAME], ["remove", NAME] ({src} expands)
  keep    (optional) what must be as it was after the run: [{"path": NAME, "type": "fifo" | "symlink"
          | "dir" | "char", "text": TEXT, "same_as": SOURCE}] (an output must never replace a pipe, a
          link, a device or an input of the command)
  exit    (optional) the exit status when not 2: 1 (a FAILED row among results), 0 (an input that
          runs with a warning; its stderr is held to max_stderr_bytes)
  max_stderr_bytes  (optional) the most stderr may hold (messages are bounded whatever the input)
  limit_as_kb       (optional) the address-space limit (ulimit -v) the entry runs under: running out
          of memory is a message and exit 2 (skipped under AddressSanitizer)
`{repeat:TEXT:N}` in an argument, a written file or a kept text stands for TEXT written N times.
cli.txt lists the CLI entries' command lines, one a line, for reading.

Usage: tools/make_bad_inputs.py [--out tests/data/bad_inputs] [--append]
  --append keeps the committed entries as they are and adds those of the generators in APPENDED not
  there yet (a full run re-draws the mutations whenever a shipped scenario, profile or key changes).
"""
import argparse
import copy
import json
import os
import random
import re
import shutil
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEED = 12  # fixed, so the corpus regenerates byte for byte
EXPERT_TP_SEED = 29  # add_expert_tp_entries' own stream
MOE_STEP_SEED = 31  # add_moe_step_entries' own stream
MOE_TRANSFORMER_STEP_SEED = 37  # add_moe_transformer_step_entries' own stream

# Tokens written verbatim into the YAML (so NaN and inf spellings survive).
BAD_POSITIVE_REAL = ["0", "-1", "1e-300", "1e300", ".nan", ".inf", "-.inf", "abc"]
BAD_EFFICIENCY = ["0", "-1", "1e300", ".nan", ".inf", "abc"]
BAD_LATENCY = ["-1", "1e300", ".nan", ".inf", "-.inf", "abc"]
BAD_COUNT = ["0", "-1", "1.5", "1e18", "99999999999999999999", "1e300", ".nan", "abc"]
BAD_OTHER_NUMBER = [".nan", ".inf", "abc"]

COUNT_KEYS = {"sm_count", "num_gpus", "tp", "tokens", "batch", "seq", "d_model", "d_ffn", "heads", "kv_heads", "head_dim",
              "layers", "channels", "nvls_channels", "p2p_channels", "m", "n", "k", "gpus_per_numa",
              "gpus_per_node", "nodes", "min_sm_partition", "ranks"}
# String values that name one of a fixed set of things: an unknown name is an error.
ENUM_KEYS = {"kind", "dtype", "model", "topology", "library", "algorithm", "protocol", "arch", "fidelity",
             "primitive"}


# Keys whose 0 is documented as "not given" (docs/reference/inputs.md), or as "none" (nvls_efficiency:
# a GPU without NVLink SHARP): 0 is valid there.
ZERO_MEANS_UNSET = {"hbm_bandwidth_gbps", "cta_gbps", "clock_mhz", "kv_heads", "gemm_tile_us", "gpus_per_node",
                    "gpus_per_numa", "nvls_efficiency"}


def number_class(path):
    path = tuple(p for p in path if isinstance(p, str))  # a list element: its list's key
    if path[-1] in ZERO_MEANS_UNSET:
        return [t for t in _number_class(path) if t != "0"]
    return _number_class(path)


def _number_class(path):
    leaf = path[-1]
    if leaf.endswith("efficiency"):
        return BAD_EFFICIENCY
    if leaf.endswith("_gbps") or leaf == "clock_mhz" or (len(path) >= 2 and path[-2] == "peak_tflops"):
        return BAD_POSITIVE_REAL
    if leaf.endswith("_us") or (len(path) >= 2 and any(p.endswith("latency_us") for p in path[:-1])):
        return BAD_LATENCY
    if leaf in COUNT_KEYS:
        return BAD_COUNT
    return BAD_OTHER_NUMBER


def dotted(path):
    return ".".join(str(p) for p in path)


def leaves(node, path=()):
    """(path, value) of every scalar leaf and every map/list node, depth first."""
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            yield from leaves(v, path + (k,))
    elif isinstance(node, list):
        yield path, node
        for i, v in enumerate(node):
            yield from leaves(v, path + (i,))
    else:
        yield path, node


def get(doc, path):
    for p in path:
        doc = doc[p]
    return doc


def put(doc, path, value):
    get(doc, path[:-1])[path[-1]] = value


PLACEHOLDER = "__BAD_VALUE__"


def dump(doc, raw=None):
    text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=1000)
    if raw is not None:
        text = text.replace("'" + PLACEHOLDER + "'", raw).replace(PLACEHOLDER, raw)
    return text


def misspell(word, rng):
    """A near miss of `word` (a dropped, doubled or swapped letter) that differs from it."""
    word = str(word)
    for _ in range(20):
        i = rng.randrange(len(word))
        op = rng.choice(["drop", "double", "swap"]) if len(word) > 2 else "double"
        if op == "drop":
            w = word[:i] + word[i + 1:]
        elif op == "double":
            w = word[:i] + word[i] + word[i:]
        else:
            j = min(i + 1, len(word) - 1)
            w = word[:i] + word[j] + word[i] + word[j + 1:] if j != i else word + "x"
        if w and w != word:
            return w
    return word + "x"


def name_of(ident):
    """An entry's id without its four-digit sequence prefix."""
    return ident.split("_", 1)[1] if "_" in ident else ident


class Corpus:
    def __init__(self, out, committed=None):
        self.out = out
        # --append: the committed entries stay as they are; an entry whose name is already among them
        # is not added again, and every new one is numbered after them.
        self.entries = list(committed or [])
        self.known = {name_of(e["id"]) for e in self.entries}
        self.ids = set()

    def _new_ident(self, name):
        ident = re.sub(r"[^A-Za-z0-9_.+-]", "_", f"{len(self.entries):04d}_{name}")[:120]
        return None if name_of(ident) in self.known else ident

    def add_file(self, sub, name, text, cls, argv, where, key, binary=False, exit_code=2, ext=".yaml"):
        ident = self._new_ident(name)
        if ident is None:
            return
        rel = f"{sub}/{ident}{ext}"
        path = os.path.join(self.out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(text if binary else text.encode())
        entry = {"id": ident, "class": cls, "file": rel, "argv": argv,
                 "where": where if where is not None else os.path.basename(rel), "key": key}
        if exit_code != 2:
            entry["exit"] = exit_code
        self.entries.append(entry)

    def add_cli(self, name, argv, cls, where, key, setup=None, keep=None, **extra):
        ident = self._new_ident(name)
        if ident is None:
            return
        entry = {"id": ident, "class": cls, "argv": argv, "where": where, "key": key}
        if setup:
            entry["setup"] = setup
        if keep:
            entry["keep"] = keep
        entry.update(extra)  # exit, max_stderr_bytes, limit_as_kb
        self.entries.append(entry)


def load(path):
    with open(path) as f:
        return yaml.safe_load(f)


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def mutate_doc(corpus, rng, doc, sub, stem, argv, key_prefix, budget):
    """The structured mutations of one parsed file: at most budget[class] entries per class."""
    # `run` leaves a scenario's sweep to `overlap-sim sweep`: mutations there are the huge_sweep cases.
    items = [(p, v) for p, v in leaves(doc) if not (p and p[0] == "sweep")]
    numeric = [(p, v) for p, v in items if p and is_number(v)]
    maps = [(p, v) for p, v in items if isinstance(v, dict) and v]
    strings = [(p, v) for p, v in items if p and isinstance(v, str) and isinstance(p[-1], str) and p[-1] in ENUM_KEYS]

    def key_of(path):
        return ".".join([key_prefix] + [str(p) for p in path]) if key_prefix else dotted(path)

    several_schemes = isinstance(doc.get("schemes"), list) and len(doc["schemes"]) > 1

    def exit_of(path):
        # A bad parameter of one scheme among several: that scheme's row FAILS, the others are
        # reported, exit status 1 (README "Bad input"); alone, or anywhere else, exit 2.
        # A value the loader's parameter table refuses is exit 2 even then: either is right.
        return [1, 2] if several_schemes and len(path) > 2 and path[0] == "schemes" and path[2] == "params" else 2

    # Out-of-range and non-numeric values for numbers.
    cases = [(p, tok) for p, _ in numeric for tok in number_class(p)]
    for p, tok in rng.sample(cases, min(budget["out_of_range"], len(cases))):
        d = copy.deepcopy(doc)
        put(d, p, PLACEHOLDER)
        cls = "wrong_type" if tok == "abc" else "out_of_range"
        corpus.add_file(sub, f"{stem}_{cls}_{dotted(p)}_{tok}", dump(d, tok), cls, argv, None, key_of(p),
                        exit_code=exit_of(p))

    # Wrong types: a list or a map where a number or name goes, a scalar where a map goes.
    cases = [(p, "[1, 2]") for p, _ in numeric + strings] + [(p, "{a: 1}") for p, _ in numeric] + \
            [(p, "42") for p, _ in maps if p] + [(p, "[]") for p, _ in maps if p]
    for p, tok in rng.sample(cases, min(budget["wrong_type"], len(cases))):
        d = copy.deepcopy(doc)
        put(d, p, PLACEHOLDER)
        corpus.add_file(sub, f"{stem}_wrong_type_{dotted(p)}", dump(d, tok), "wrong_type", argv, None, key_of(p),
                        exit_code=exit_of(p))

    # Unknown names where a fixed set of names goes.
    for p, v in rng.sample(strings, min(budget["bad_name"], len(strings))):
        d = copy.deepcopy(doc)
        put(d, p, misspell(v, rng) + "_bogus")
        corpus.add_file(sub, f"{stem}_bad_name_{dotted(p)}", dump(d), "bad_name", argv, None, key_of(p),
                        exit_code=exit_of(p))

    # A misspelt copy of a key next to the real one, at every level: it must not be ignored.
    cases = [(p, k) for p, m in maps for k in m.keys() if isinstance(k, str)] + [((), k) for k in doc]
    for p, k in rng.sample(cases, min(budget["misspelt_key"], len(cases))):
        d = copy.deepcopy(doc)
        m = get(d, p)
        wrong = misspell(k, rng)
        while wrong in m:
            wrong = misspell(wrong, rng)
        m[wrong] = copy.deepcopy(m[k])
        corpus.add_file(sub, f"{stem}_misspelt_key_{dotted(p + (wrong,))}", dump(d), "misspelt_key", argv, None,
                        key_of(p + (wrong,)))

    # Duplicate keys: the same key twice in one map with different values (text edit: PyYAML dicts
    # cannot hold duplicates).
    text = dump(doc)
    lines = text.splitlines()
    dup_cases = [i for i, line in enumerate(lines) if re.match(r"^\s*[A-Za-z_][\w.]*: \S", line)]
    for i in rng.sample(dup_cases, min(budget["duplicate_key"], len(dup_cases))):
        line = lines[i]
        indent = len(line) - len(line.lstrip())
        # The path of this key: walk up by indentation.
        path = [line.strip().split(":")[0]]
        want = indent
        for j in range(i - 1, -1, -1):
            lj = lines[j]
            ind = len(lj) - len(lj.lstrip())
            if lj.strip() and ind < want and re.match(r"^\s*[A-Za-z_][\w.]*:", lj):
                path.insert(0, lj.strip().split(":")[0])
                want = ind
            if want == 0:
                break
        if any(lines[k].lstrip().startswith("- ") for k in range(i + 1)) and indent > 0:
            continue  # keys under list items: path walk above does not see the index
        dup = lines[:i + 1] + [" " * indent + path[-1] + ": " + line.split(":", 1)[1].strip() + "0"] + lines[i + 1:]
        corpus.add_file(sub, f"{stem}_duplicate_key_{'.'.join(path)}", "\n".join(dup) + "\n", "duplicate_key", argv,
                        None, (key_prefix + "." if key_prefix else "") + ".".join(path))


def unparsable(text):
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return True
    return not isinstance(doc, dict)


def text_mutations(corpus, rng, text, sub, stem, argv, count):
    """Truncated and garbled YAML; kept only when PyYAML cannot read it as a map (so the entry is bad
    whatever the loader's checks are)."""
    made = 0
    tries = 0
    while made < count and tries < count * 20:
        tries += 1
        # (No tab-indent mutation: yaml-cpp reads a tab-indented line as the same document, so
        # there is nothing to refuse.)
        kind = rng.choice(["truncate_open_flow", "truncate_quote", "bad_indent", "garbage_bytes", "unbalanced_flow"])
        if kind == "truncate_open_flow":
            cut = rng.randrange(1, len(text))
            t = text[:cut] + " {"
        elif kind == "truncate_quote":
            cut = rng.randrange(1, len(text))
            t = text[:cut] + ' "unterminated'
        elif kind == "tab_indent":
            lines = text.splitlines()
            idx = [i for i, l in enumerate(lines) if l.startswith("  ")]
            if not idx:
                continue
            i = rng.choice(idx)
            lines[i] = "\t" + lines[i].lstrip()
            t = "\n".join(lines) + "\n"
        elif kind == "bad_indent":
            lines = text.splitlines()
            idx = [i for i, l in enumerate(lines) if l.startswith("  ") and ":" in l]
            if not idx:
                continue
            i = rng.choice(idx)
            lines[i] = " " + lines[i]
            t = "\n".join(lines) + "\n"
        elif kind == "garbage_bytes":
            cut = rng.randrange(1, len(text))
            junk = bytes(rng.randrange(256) for _ in range(rng.randrange(4, 64)))
            b = text[:cut].encode() + b"\n\x00" + junk + b"\n" + text[cut:].encode()
            corpus.add_file(sub, f"{stem}_{kind}_{made}", b, "garbled_yaml", argv, None, None, binary=True)
            made += 1
            continue
        else:
            t = text.replace("{", "{{", 1) if "{" in text else text + "\nx: [1, 2\n"
        if not unparsable(t):
            continue
        corpus.add_file(sub, f"{stem}_{kind}_{made}", t, "garbled_yaml", argv, None, None)
        made += 1


TUNE_OPERATOR = ["--hardware", "a800-8x-nvlink", "--gemm", "8192x8192x4096", "--primitive", "all_reduce", "--ranks", "4",
                 "--search", "flashoverlap"]


def scen(corpus, mlp, run_file, mod, name, cls, key, raw=None, argv=None):
    """A scenario file: the MLP scenario without its sweep, changed by `mod`."""
    d = copy.deepcopy(mlp)
    d.pop("sweep", None)
    mod(d)
    corpus.add_file("scenarios", name, dump(d, raw), cls, argv or run_file, None, key)


def without_sweep(mlp):
    """The MLP scenario's text without its sweep."""
    return dump({k: v for k, v in mlp.items() if k != "sweep"})


def add_output_entries(corpus, mlp_path):
    """Outputs: two flags naming one file (after resolving), special files, empty paths."""
    no = ["--scheme", "no_overlap"]
    op = TUNE_OPERATOR
    old = [["write", "k.json", "old"]]
    keep_old = [{"path": "k.json", "text": "old"}]
    clash = [
        ("run_o_trace", ["run", mlp_path] + no + ["-o", "{tmp}/k.json", "--trace", "{tmp}/k.json"], "-o", old),
        ("run_graphviz_trace", ["run", mlp_path] + no + ["--graphviz", "{tmp}/k.json", "--trace", "{tmp}/./k.json"],
         "--graphviz", old),
        ("run_plot_trace_link", ["run", mlp_path] + no + ["-o", "{tmp}/link.json", "--trace", "{tmp}/k.json"], "-o",
         old + [["symlink", "k.json", "link.json"]]),
        ("tune_o_export", ["tune"] + op + ["-o", "{tmp}/k.json", "--export-flashoverlap", "k.json"], "-o", old),
        ("sweep_o_checkpoint", ["sweep", mlp_path, "--sweep", "workload.tokens=4096", "-o", "{tmp}/k.json",
                                "--plot", "{tmp}/k.json.partial"], "-o", old),
    ]
    for name, argv, where, setup in clash:
        keep = keep_old + ([{"path": "link.json", "type": "symlink"}] if any(s[0] == "symlink" for s in setup) else [])
        corpus.add_cli(f"output_clash_{name}", argv, "output_clash", where, None, setup, keep)
    special = [
        ("fifo_no_reader", ["run", mlp_path] + no + ["-o", "{tmp}/fifo"], "fifo", [["mkfifo", "fifo"]],
         [{"path": "fifo", "type": "fifo"}]),
        ("trace_fifo_link", ["run", mlp_path] + no + ["--trace", "{tmp}/link"], "link",
         [["mkfifo", "fifo"], ["symlink", "fifo", "link"]], [{"path": "fifo", "type": "fifo"},
                                                              {"path": "link", "type": "symlink"}]),
        ("dev_full", ["run", mlp_path] + no + ["-o", "/dev/full"], "/dev/full", None, None),
        ("directory", ["run", mlp_path] + no + ["-o", "{tmp}/d"], "-o", [["mkdir", "d"]],
         [{"path": "d", "type": "dir"}]),
        ("trailing_slash", ["run", mlp_path] + no + ["-o", "{tmp}/new/"], "new/", None, None),
        ("empty_o", ["run", mlp_path] + no + ["-o", ""], "-o", None, None),
        ("empty_trace", ["run", mlp_path] + no + ["--trace", ""], "--trace", None, None),
        ("empty_tune_export", ["tune"] + op + ["--export-flashoverlap", ""], "--export-flashoverlap", None, None),
        ("papers_o_directory", ["validate", "--papers", "--source", "dtp", "-o", "{tmp}/d"], "-o",
         [["mkdir", "d"]], [{"path": "d", "type": "dir"}]),
        ("record_directory", ["validate", "{tmp}/res", "--record"], "validation.json",
         [["copytree", "{src}/tests/data/calibrate/fixture-h100", "res"], ["remove", "res/validation.json"],
          ["mkdir", "res/validation.json"]],
         [{"path": "res/validation.json", "type": "dir"}]),
        ("sweep_checkpoint_fifo", ["sweep", mlp_path, "--sweep", "workload.tokens=4096", "-o", "{tmp}/s.csv"],
         "s.csv.partial", [["mkfifo", "s.csv.partial"]], [{"path": "s.csv.partial", "type": "fifo"}]),
        ("symlink_loop", ["run", mlp_path] + no + ["-o", "{tmp}/loop"], "loop", [["symlink", "loop", "loop"]],
         [{"path": "loop", "type": "symlink"}]),
    ]
    for name, argv, where, setup, keep in special:
        corpus.add_cli(f"output_special_{name}", argv, "output_special", where, None, setup, keep)


def add_number_entries(corpus, mlp, h100_text, run_file, show_file, mlp_path):
    """Numbers as written: quoted, block, tagged, hex; a second document; a null."""
    op = TUNE_OPERATOR
    body = without_sweep(mlp)
    for tok, name in (('"8192"', "quoted"), ("'8192'", "single_quoted"), ("|\n    8192", "block"),
                      ("!foo 8192", "custom_tag"), ("!!int 8192", "int_tag"), ("!!python/object:os.system 8192",
                                                                                 "python_tag"),
                      ("0x2000", "hex"), ("0o20000", "octal_0o"), ("8_192", "separator"), (".inf", "inf")):
        scen(corpus, mlp, run_file, lambda d: d["workload"].update(tokens=PLACEHOLDER), f"number_tokens_{name}", "number_as_written",
             "workload.tokens", tok)
    for tok, name in (('"132"', "quoted"), ("!!float 132", "float_tag"), ("0x84", "hex")):
        text = re.sub(r"(?m)^(  sm_count:) .*$", r"\1 " + tok.replace("\\", "\\\\"), h100_text, count=1)
        corpus.add_file("profiles", f"number_sm_count_{name}", text, "number_as_written", show_file, None,
                        "gpu.sm_count")
    corpus.add_file("scenarios", "second_document", body + "---\nworkload: {tp: 1}\n", "trailing_document", run_file,
                    None, None)
    corpus.add_file("scenarios", "text_after_end", body + "...\nfidelity: steps\n", "trailing_document", run_file,
                    None, None)
    corpus.add_file("profiles", "second_document", h100_text + "---\ngpu: {sm_count: 1}\n", "trailing_document",
                    show_file, None, None)
    scen(corpus, mlp, run_file, lambda d: d.update(schemes=PLACEHOLDER), "null_schemes", "null_value", "schemes", "~")
    scen(corpus, mlp, run_file, lambda d: d.update(fidelity=PLACEHOLDER), "null_fidelity", "null_value", "fidelity", "null")
    corpus.add_file("profiles", "null_description", re.sub(r"(?m)^description:.*$", "description: ~", h100_text,
                                                           count=1), "null_value", show_file, None, "description")
    for name, argv, key in (
            ("set_quoted", ["run", mlp_path, "--set", 'workload.tokens="8192"'], "workload.tokens"),
            ("set_tag", ["run", mlp_path, "--set", "workload.tokens=!!int 8192"], "workload.tokens"),
            ("set_hex", ["run", mlp_path, "--set", "workload.tokens=0x2000"], "workload.tokens"),
            ("set_hex_profile", ["run", mlp_path, "--set", "hardware.gpu.sm_count=0x84"], "hardware.gpu.sm_count"),
            ("set_null_schemes", ["run", mlp_path, "--set", "schemes=~"], "schemes"),
            ("set_second_document", ["run", mlp_path, "--set", "workload.tokens=8192\n---\n1"], "workload.tokens"),
            ("profile_set_quoted", ["profile", "show", "h100-sxm-8x-nvswitch", "--set", 'gpu.sm_count="132"'],
             "gpu.sm_count")):
        corpus.add_cli(f"number_{name}", argv, "number_as_written", "--set", key)
    corpus.add_cli("number_param_hex", ["run", mlp_path, "--scheme", "data_slicing", "--param", "chunks=0x8"],
                   "number_as_written", "--param", "chunks")
    corpus.add_cli("number_tune_ranks_hex", ["tune"] + op[:-2] + ["--ranks", "0x4"], "number_as_written", "--ranks",
                   None)
    corpus.add_cli("number_jobs_octal_hex", ["sweep", mlp_path, "-j", "0x2"], "number_as_written", "--jobs", None)


def add_budget_entries(corpus, mlp, run_file, show_file, mlp_path):
    """Bounded time and memory: alias bombs, huge grids, many keys, work beyond the budgets."""
    body = without_sweep(mlp)
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [" + ", ".join([f"*{p}"] * 9) + "]\n" for p, c in zip("abcdefghi", "bcdefghij"))
    corpus.add_file("scenarios", "alias_bomb_10", bomb + "workload: *j\n", "alias_bomb", run_file, None, None)
    corpus.add_file("profiles", "alias_bomb_10", bomb + "gpu: *j\n", "alias_bomb", show_file, None, None)
    # An alias inside the node it names: a cycle every walk of the tree would follow forever (found
    # by tools/fuzz.sh as a stack overflow through a --set value).
    corpus.add_file("scenarios", "alias_recursive_sweep", body + "sweep:\n  workload.tokens: &s [*s]\n",
                    "alias_bomb", ["sweep", "{file}", "-o", "{tmp}/s.csv"], None, "sweep.workload.tokens.0")
    corpus.add_file("scenarios", "alias_recursive_params", body + "schemes:\n  - {name: flashoverlap, params: "
                    "{groups: &g [1, *g]}}\n", "alias_bomb", run_file, None, "schemes.0.params.groups.1")
    corpus.add_cli("alias_recursive_set", ["run", mlp_path, "--set", "workload.tokens=&a [*a]"], "alias_bomb",
                   "--set", "workload.tokens")
    d = copy.deepcopy(mlp)
    d["sweep"] = {"workload.tokens": list(range(1024, 1024 + 1000)), "hardware.comm.channels": list(range(1, 1001)),
                  "workload.dtype": ["bf16"] * 1000}
    corpus.add_file("scenarios", "sweep_grid_1000_cubed", dump(d), "huge_grid", ["sweep", "{file}", "-o", "{tmp}/s.csv"],
                    None, "sweep")
    d = copy.deepcopy(mlp)
    d["sweep"] = {f"workload.unknown{i}": list(range(1, 11)) for i in range(5)}
    corpus.add_file("scenarios", "sweep_unknown_keys_5x10", dump(d), "huge_grid", ["sweep", "{file}", "-o",
                                                                                    "{tmp}/s.csv"],
                    None, "workload.unknown0")
    corpus.add_cli("sweep_flags_grid_huge", ["sweep", mlp_path] + [
        a for i, key in enumerate(["workload.tokens", "hardware.comm.channels", "hardware.gpu.sm_count"])
        for a in ("--sweep", key + "=" + ",".join(str(v) for v in range(8 + i, 8 + i + 100)))] + ["-o", "{tmp}/s.csv"],
                   "huge_grid", "sweep", None)
    many = body + "".join(f"k{i}: {i}\n" for i in range(20000)) + "k7: 7\n"
    corpus.add_file("scenarios", "many_keys_20000", many, "many_keys", run_file, None, "k7")
    huge_gemm = ("name: huge\nhardware: h100-sxm-8x-nvswitch\nworkload: {kind: gemm_collective, tp: 8, "
                 "m: 16777216, n: 16777216, k: 16777216, primitive: all_reduce}\nschemes: [flashoverlap]\n")
    corpus.add_file("scenarios", "work_gemm_16777216_cubed", huge_gemm, "work_budget", run_file, None, "workload.m")
    corpus.add_file("scenarios", "work_gemm_16777216_cubed_tune", huge_gemm, "work_budget", ["tune", "{file}"], None,
                    "workload.m")
    scen(corpus, mlp, run_file, lambda d: d["workload"].update(tokens=16777216), "work_mlp_max_tokens", "work_budget", "workload.tokens")
    corpus.add_file("scenarios", "work_tp_65536",
                    "hardware: h100-sxm-8x-nvswitch\nworkload: {kind: gemm_collective, tp: 65536, m: 65536, n: 65536, "
                    "k: 1024, primitive: all_reduce}\n", "work_budget",
                    ["run", "{file}", "--set", "hardware.fabric.num_gpus=65536"], None, "workload.tp")
    corpus.add_cli("work_tune_gemm_huge", ["tune", "--hardware", "a800-8x-nvlink", "--gemm",
                                           "16777216x16777216x16777216", "--primitive", "all_reduce", "--ranks", "4",
                                           "--search", "flashoverlap"], "work_budget", "--gemm", None)


def add_utf8_entries(corpus, mlp, h100_text, run_file, show_file):
    """Text that is not UTF-8 (names reach the JSON writer)."""
    body = without_sweep(mlp)
    corpus.add_file("scenarios", "utf8_name", b"name: \"x\xff\"\n" + body.encode(), "invalid_utf8",
                    run_file + ["--format", "json"], None, "name", binary=True)
    corpus.add_file("scenarios", "utf8_key", body.encode() + b"k\xc3\x28: 1\n", "invalid_utf8", run_file, None, None,
                    binary=True)
    corpus.add_file("profiles", "utf8_gpu_name",
                    re.sub(r"(?m)^(  name:) .*$", r"\1 HX100", h100_text, count=1).encode().replace(b"HX100", b"H\xe9100"),
                    "invalid_utf8", show_file + ["--format", "json"], None, "gpu.name", binary=True)


def add_topology_entries(corpus, show_file):
    """Topologies: one check for every command, naming the profile file, line and key."""
    topo = ("name: ex\ngpu: {name: H100, sm_count: 132, peak_tflops: {bf16: 989}, hbm_bandwidth_gbps: 3350}\n"
            "fabric:\n  topology: explicit\n  num_gpus: 2\n  links: {nvlink: {bandwidth_gbps: 450, latency_us: 1}}\n"
            "  nodes:\n    - {name: g0, kind: gpu, gpu: 0}\n    - {name: g1, kind: gpu, gpu: 1}\n"
            "    - {name: sw, kind: nvswitch}\n  edges:\n    - {from: g0, to: sw, link_class: nvlink}\n"
            "    - {from: g1, to: sw, link_class: nvlink}\n")
    for name, a, b, key in (
            ("self_loop", "{from: g1, to: sw", "{from: g1, to: g1", "fabric.edges.1.to"),
            ("disconnected_gpu", "    - {from: g1, to: sw, link_class: nvlink}\n", "", "fabric.nodes.1"),
            ("duplicate_gpu_index", "{name: g1, kind: gpu, gpu: 1}", "{name: g1, kind: gpu, gpu: 0}",
             "fabric.nodes.1.gpu"),
            ("one_way_edge", "{from: g0, to: sw, link_class: nvlink}", "{from: g0, to: sw, link_class: nvlink, "
                                                                       "bidirectional: false}", "fabric.edges.0"),
            ("num_gpus_disagrees", "num_gpus: 2", "num_gpus: 3", "fabric.num_gpus")):
        text = topo.replace(a, b, 1)
        corpus.add_file("profiles", f"topology_{name}", text, "topology", show_file, None, key)
        # `run` on a scenario whose hardware is that profile: the message names the profile (p.yaml).
        corpus.add_cli(f"topology_{name}_run", ["run", "{tmp}/s.yaml"], "topology", "p.yaml", key,
                       [["write", "p.yaml", text],
                        ["write", "s.yaml", "hardware: p.yaml\nworkload: {kind: gemm_collective, tp: 2, m: 1024, "
                                            "n: 1024, k: 1024, primitive: all_reduce}\n"]])


def add_flag_entries(corpus, mlp_path):
    """Loose flags."""
    op = TUNE_OPERATOR
    corpus.add_cli("flag_tune_algo_negative", ["tune"] + op + ["--algo", "-1", "--export-flashoverlap", "{tmp}/x.json"],
                   "loose_flag", "--algo", None)
    corpus.add_cli("flag_param_twice", ["run", mlp_path, "--scheme", "data_slicing", "--param", "chunks=4", "--param",
                                        "chunks=8"], "loose_flag", "--param", "chunks")
    corpus.add_cli("flag_set_cross_key", ["run", mlp_path, "--set", "hardware.fabric.num_gpus=4"], "loose_flag",
                   "--set hardware.fabric.num_gpus=4", "workload.tp")
    corpus.add_cli("flag_set_value_attributed", ["run", mlp_path, "--set", "workload.tokens=8192x"], "loose_flag",
                   "--set workload.tokens=8192x", "workload.tokens")


def add_robustness_entries(corpus, mlp, h100_text, run_file, show_file, mlp_path):
    """Damage beyond malformed files: outputs that would damage what they replace, numbers not read as written,
    unbounded time or memory, internal errors, unchecked topologies, loose flags."""
    add_output_entries(corpus, mlp_path)
    add_number_entries(corpus, mlp, h100_text, run_file, show_file, mlp_path)
    add_budget_entries(corpus, mlp, run_file, show_file, mlp_path)
    add_utf8_entries(corpus, mlp, h100_text, run_file, show_file)
    add_topology_entries(corpus, show_file)
    add_flag_entries(corpus, mlp_path)


def add_mutations(corpus, rng, out, scenarios, profiles, run_file, show_file):
    """Mutations of every shipped scenario, of a scenario with each profile written inline, and of
    every profile (values, keys, text, link classes)."""
    prof_budget = {"out_of_range": 12, "wrong_type": 4, "bad_name": 1, "misspelt_key": 6, "duplicate_key": 1}

    mutate_scenarios(corpus, rng, scenarios, run_file)
    # A scenario with its hardware written inline: the profile's keys under `hardware.`.
    base_scen = load(os.path.join(ROOT, "scenarios", "llama3-70b-tp8-mlp.yaml"))
    base_scen.pop("sweep", None)
    for path, prof in profiles:
        stem = "inline_" + os.path.splitext(os.path.basename(path))[0]
        if prof.get("fabric", {}).get("num_gpus", 0) < 8:
            continue
        scen = copy.deepcopy(base_scen)
        scen["hardware"] = copy.deepcopy(prof)
        sub_budget = {"out_of_range": 5, "wrong_type": 2, "bad_name": 1, "misspelt_key": 3, "duplicate_key": 0}
        # Mutate the profile alone (keys prefixed with hardware.), then embed each result in the scenario.
        tmp = Corpus(out)
        mutate_doc(tmp, rng, scen["hardware"], "scenarios", stem, run_file, "hardware", sub_budget)
        for e in tmp.entries:
            p = os.path.join(out, e["file"])
            with open(p) as f:
                hw_text = f.read()
            os.remove(p)
            indented = "\n".join("  " + line for line in hw_text.splitlines())
            scen_wo = copy.deepcopy(scen)
            scen_wo["hardware"] = PLACEHOLDER
            text = dump(scen_wo, "\n" + indented)
            corpus.add_file("scenarios", e["id"].split("_", 1)[1], text, e["class"], run_file, None, e["key"])

    for path, doc in profiles:
        stem = os.path.splitext(os.path.basename(path))[0]
        mutate_doc(corpus, rng, doc, "profiles", stem, show_file, "", prof_budget)
        with open(path) as f:
            text_mutations(corpus, rng, f.read(), "profiles", stem, show_file, 2)
        # Misspelt link class: a second class next to the real ones (nvlink -> nvlnk).
        links = doc.get("fabric", {}).get("links", {})
        for cls in list(links)[:2]:
            d = copy.deepcopy(doc)
            wrong = misspell(cls, rng)
            d["fabric"]["links"][wrong] = copy.deepcopy(links[cls])
            corpus.add_file("profiles", f"{stem}_misspelt_link_{wrong}", dump(d), "misspelt_link", show_file, None,
                            f"fabric.links.{wrong}")


def add_degenerate_entries(corpus, run_file, show_file):
    """Empty and degenerate files. Deep nesting: flow sequences and block maps nested very deep (a recursive
    parser's stack)."""
    for name, text in [("empty", ""), ("blank", "\n\n   \n"), ("comment_only", "# nothing here\n"), ("doc_marker", "---\n"),
                       ("null", "~\n"), ("scalar", "hello\n"), ("list", "- 1\n- 2\n"), ("bom_only", "\ufeff"),
                       ("nul_bytes", "\x00\x00\x00")]:
        corpus.add_file("scenarios", f"degenerate_{name}", text, "empty_file", run_file, None, None)
        corpus.add_file("profiles", f"degenerate_{name}", text, "empty_file", show_file, None, None)

    # Deep nesting: flow sequences and block maps nested very deep (a recursive parser's stack).
    for depth in (64, 1000, 10000, 50000):
        corpus.add_file("scenarios", f"deep_flow_{depth}",
                        "name: x\nhardware: h100-sxm-8x-nvswitch\nworkload: " + "[" * depth + "1" + "]" * depth + "\n",
                        "deep_nesting", run_file, None, "workload" if depth < 1000 else None)
        # (Past yaml-cpp's nesting limit the file does not parse: the message names file and line.)
        corpus.add_file("profiles", f"deep_flow_{depth}", "name: x\ngpu: " + "{a: " * depth + "1" + "}" * depth + "\n",
                        "deep_nesting", show_file, None, "gpu" if depth < 1000 else None)
    for depth in (64, 400):
        nested = "".join("  " * i + f"k{i}:\n" for i in range(depth)) + "  " * depth + "1\n"
        corpus.add_file("scenarios", f"deep_block_{depth}",
                        "name: x\nhardware: h100-sxm-8x-nvswitch\nworkload:\n" +
                        "\n".join("  " + line for line in nested.splitlines()) + "\n",
                        "deep_nesting", run_file, None, "workload")
    corpus.add_file("scenarios", "deep_anchor_bomb",
                    "a: &a [x, x, x, x, x, x, x, x, x]\n" +
                    "".join(f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
                            for p, c in zip("abcdefgh", "bcdefghi")) + "workload: *i\n",
                    "deep_nesting", run_file, None, None)


def add_huge_lists(corpus, mlp, run_file):
    """Huge lists where a scalar goes, and huge sweeps with one bad value at the end."""
    for n in (3000, 20000):
        d = copy.deepcopy(mlp)
        d["workload"]["tokens"] = list(range(1, n + 1))
        corpus.add_file("scenarios", f"huge_list_tokens_{n}", dump(d), "huge_list", run_file, None, "workload.tokens")
        d = copy.deepcopy(mlp)
        d["schemes"] = [{"name": "no_overlap"}] * (n - 1) + [{"name": "no_such_scheme"}]
        corpus.add_file("scenarios", f"huge_list_schemes_{n}", dump(d), "huge_list", run_file, None, f"schemes.{n - 1}")
        d = copy.deepcopy(mlp)
        d["sweep"] = {"workload.tokens": [1024 * (1 + i % 16) for i in range(n - 1)] + [-1]}
        corpus.add_file("scenarios", f"huge_sweep_{n}", dump(d), "huge_list", ["sweep", "{file}", "-o", "{tmp}/s.csv"],
                        None, "workload.tokens")


def add_examples(corpus, mlp, run_file, show_file):
    """The examples the hardening requirements name, as files, and what tools/fuzz.sh found.
    Returns the built-in H100 profile's text."""
    def scen_with(mod, name, key, raw=None):
        d = copy.deepcopy(mlp)
        d.pop("sweep", None)
        mod(d)
        corpus.add_file("scenarios", name, dump(d, raw), "issue_example", run_file, None, key)
    scen_with(lambda d: d["workload"].update(tokens=PLACEHOLDER), "issue_tokens_1e18", "workload.tokens", "1e18")
    tr = load(os.path.join(ROOT, "scenarios", "llama3-70b-tp8-transformer.yaml"))
    for tok, name in (("1e18", "batch_1e18"), ("1000000000000", "batch_1e12")):
        d = copy.deepcopy(tr)
        d["workload"]["batch"] = PLACEHOLDER
        corpus.add_file("scenarios", f"issue_{name}", dump(d, tok), "issue_example", run_file, None, "workload.batch")
    for tok in ("1e13", "-5", ".nan"):
        d = copy.deepcopy(tr)
        d["workload"] = {"kind": "transformer", "tp": 8, "model": "llama3-70b", "batch": 1, "seq": 8192,
                         "dtype": "bf16", "allreduce_us": PLACEHOLDER}
        corpus.add_file("scenarios", f"issue_allreduce_us_{tok}", dump(d, tok), "issue_example", run_file, None,
                        "workload.allreduce_us")
    fo = load(os.path.join(ROOT, "scenarios", "papers", "flashoverlap-a800-allreduce.yaml"))
    for tok in ("1000000", "0", "-3", "[100, 100]", "[0]", "[]"):
        d = copy.deepcopy(fo)
        d.pop("sweep", None)
        d["schemes"] = [{"name": "flashoverlap", "params": {"groups": PLACEHOLDER}}]
        corpus.add_file("scenarios", f"issue_groups_{tok}", dump(d, tok), "issue_example", run_file, None,
                        "schemes.0.params.groups")
    h100 = load(os.path.join(ROOT, "scenarios", "hardware", "h100-sxm-8x-nvswitch.yaml"))
    for key, tok in (("fabric.num_gpus", "1000000"), ("gpu.hbm_bandwidth_gbps", "1e-300"),
                     ("gpu.peak_tflops.bf16", "1e-9"), ("gpu.peak_tflops.bf16", "1e300")):
        d = copy.deepcopy(h100)
        put(d, tuple(key.split(".")), PLACEHOLDER)
        corpus.add_file("profiles", f"issue_{key}_{tok}", dump(d, tok), "issue_example", show_file, None, key)
    scen_with(lambda d: d.update(hardware="/tmp"), "issue_hardware_dir", "hardware")
    scen_with(lambda d: d.update(hardware="/dev/zero"), "issue_hardware_dev_zero", "hardware")
    scen_with(lambda d: d.update(hardware="/nonexistent/profile.yaml"), "issue_hardware_missing", "hardware")
    # Found by tools/fuzz.sh: a profile name longer than a path may be (std::filesystem throws
    # ENAMETOOLONG, which must be an input error, not an internal one); a sweep listing the same
    # values again and again (each repeat must not be loaded again).
    scen_with(lambda d: d.update(hardware="h100 " * 1000), "fuzz_hardware_name_too_long", "hardware")
    # A map as a key ("? pci: 15.0" then ": 1"): yaml-cpp's bad conversion was an internal error.
    with open(os.path.join(ROOT, "scenarios", "hardware", "h100-sxm-8x-nvswitch.yaml")) as f:
        h100_text = f.read()
    corpus.add_file("profiles", "fuzz_map_as_key", h100_text + "? pci: 15.0\n: 1\n", "garbled_yaml", show_file, None, None)
    corpus.add_file("scenarios", "fuzz_map_as_key", "? [a, b]\n: 1\n" + dump(mlp), "garbled_yaml", run_file, None, None)
    d = copy.deepcopy(mlp)
    d["sweep"] = {"workload.tokens": [1024 * (1 + i % 16) for i in range(5000)] + [-1]}
    corpus.add_file("scenarios", "fuzz_sweep_repeats", dump(d), "huge_list", ["sweep", "{file}", "-o", "{tmp}/s.csv"], None,
                    "workload.tokens")
    return h100_text


def set_entries(mlp_path):
    """Bad --set assignments: out-of-range and wrong values of every kind of key, misspelt keys,
    malformed assignments."""
    cli = []
    set_cases = [
        ("hardware.gpu.peak_tflops.bf16", ["1e-9", "1e300", "0", "-1", "nan", "inf", "abc", ""]),
        ("hardware.gpu.sm_count", ["0", "-1", "1.5", "1e18", "99999999999999999999", "abc"]),
        ("hardware.gpu.hbm_bandwidth_gbps", ["1e-300", "1e300", "-1", "nan"]),  # 0 = not given
        ("hardware.gpu.clock_mhz", ["0.5", "-1", "inf"]),  # 0 = not given
        ("hardware.gpu.gemm_efficiency", ["0", "-0.5", "nan", "1e300"]),
        ("hardware.fabric.links.nvlink.bandwidth_gbps", ["0", "-1", "1e-300", "1e300", "nan"]),
        ("hardware.fabric.links.nvlink.latency_us", ["-1", "1e300", "nan"]),
        ("hardware.fabric.links.nvlnk.bandwidth_gbps", ["5"]),
        ("hardware.fabric.links.nvlink.bandwith_gbps", ["5"]),
        ("hardware.fabric.num_gpus", ["0", "-8", "1000000"]),
        ("hardware.launch.host_us", ["-1", "1e300", "nan"]),
        ("hardware.comm.channels", ["0", "-1", "1e9"]),
        ("hardware.comm.protocol", ["LL64"]),
        ("hardware.comm.algorithm", ["Rnig"]),
        ("hardware.gpuu.sm_count", ["100"]),
        ("workload.tokens", ["0", "-1", "1e18", "99999999999999999999", "1.5", "abc", "[1,2]", ""]),
        ("workload.tp", ["0", "-8", "3", "1000000"]),
        ("workload.dtype", ["fp7"]),
        ("workload.model", ["llama9"]),
        ("workload.kind", ["mlp_tpps"]),
        ("workload.tokns", ["8192"]),
        ("worklaod.tokens", ["8192"]),
        ("fidelity", ["exact"]),
        ("schemes.0.params.chunks", ["0"]),
        ("hardware", ["/tmp", "/dev/zero", "no-such-profile"]),
    ]
    for key, values in set_cases:
        for v in values:
            cli.append((f"set_{key}_{v}", ["run", mlp_path, "--set", f"{key}={v}"], "bad_set", "--set", key))
    for a in ["=5", "workload.tokens", "..=1", "workload..tokens=1", "a.b.c.d.e.f.g=1"]:
        cli.append((f"set_malformed_{a}", ["run", mlp_path, "--set", a], "bad_set", "--set", None))
    return cli


def add_cli_entries(corpus, mlp_path):
    """Bad command lines. {src}: the source tree; {tmp}: a scratch directory (outputs land there)."""
    cli = set_entries(mlp_path)
    cli += [
        ("param_no_scheme", ["run", mlp_path, "--param", "chunks=8"], "bad_param", "--param", None),
        ("param_zero_chunks", ["run", mlp_path, "--scheme", "data_slicing", "--param", "chunks=0"], "bad_param",
         "--param", "chunks"),
        ("param_unknown", ["run", mlp_path, "--scheme", "data_slicing", "--param", "chunkz=8"], "bad_param", "--param",
         "chunkz"),
        ("param_nan", ["run", mlp_path, "--scheme", "data_slicing", "--param", "chunks=nan"], "bad_param", "--param",
         "chunks"),
        ("scheme_unknown", ["run", mlp_path, "--scheme", "no_such"], "bad_flag", "--scheme", None),
        ("format_xml", ["run", mlp_path, "--format", "xml"], "bad_flag", "--format", None),
        ("fidelity_exact", ["run", mlp_path, "--fidelity", "exact"], "bad_flag", "--fidelity", None),
        ("unknown_flag", ["run", mlp_path, "--frobnicate"], "unknown_flag", "--frobnicate", None),
        ("unknown_flag_sweep", ["sweep", mlp_path, "--frobnicate"], "unknown_flag", "--frobnicate", None),
        ("unknown_command", ["frobnicate"], "unknown_flag", "frobnicate", None),
        ("unknown_profile_cmd", ["profile", "frob"], "unknown_flag", "frob", None),
        ("missing_set_arg", ["run", mlp_path, "--set"], "missing_arg", "--set", None),
        ("missing_trace_arg", ["run", mlp_path, "--trace"], "missing_arg", "--trace", None),
        ("missing_output_arg", ["run", mlp_path, "-o"], "missing_arg", "--output", None),
        ("missing_profile_name", ["profile", "show"], "missing_arg", "name", None),
        ("trace_level_bogus", ["run", mlp_path, "--scheme", "no_overlap", "--trace", "{tmp}/t.json",
                               "--trace-level", "warp"], "bad_trace_flag", "--trace-level", None),
        ("trace_ranks_letters", ["run", mlp_path, "--scheme", "no_overlap", "--trace", "{tmp}/t.json",
                                 "--trace-ranks", "a,b"], "bad_trace_flag", "--trace-ranks", None),
        ("trace_ranks_reversed", ["run", mlp_path, "--scheme", "no_overlap", "--trace", "{tmp}/t.json",
                                  "--trace-ranks", "5-3"], "bad_trace_flag", "--trace-ranks", None),
        ("trace_ranks_out_of_range", ["run", mlp_path, "--scheme", "no_overlap", "--trace", "{tmp}/t.json",
                                      "--trace-ranks", "0,99"], "bad_trace_flag", "--trace-ranks", None),
        ("trace_window_reversed", ["run", mlp_path, "--scheme", "no_overlap", "--trace", "{tmp}/t.json",
                                   "--trace-window", "10:5"], "bad_trace_flag", "--trace-window", None),
        ("trace_window_nan", ["run", mlp_path, "--scheme", "no_overlap", "--trace", "{tmp}/t.json",
                              "--trace-window", "nan:5"], "bad_trace_flag", "--trace-window", None),
        ("trace_window_no_colon", ["run", mlp_path, "--scheme", "no_overlap", "--trace", "{tmp}/t.json",
                                   "--trace-window", "5"], "bad_trace_flag", "--trace-window", None),
        ("trace_level_without_trace", ["run", mlp_path, "--trace-level", "cta"], "bad_trace_flag", "--trace-level",
         None),
        ("run_dev_zero", ["run", "/dev/zero"], "bad_input_file", "/dev/zero", None),
        ("run_directory", ["run", "{src}/scenarios"], "bad_input_file", "scenarios", None),
        ("run_missing_file", ["run", "/nonexistent/x.yaml"], "bad_input_file", "/nonexistent/x.yaml", None),
        ("profile_show_dir", ["profile", "show", "{src}/scenarios/"], "bad_input_file", "scenarios", None),
        ("profile_show_unknown", ["profile", "show", "no-such-profile"], "bad_input_file", "no-such-profile", None),
        ("profile_show_set_bad", ["profile", "show", "h100-sxm-8x-nvswitch", "--set", "gpu.sm_count=-1"], "bad_set",
         "--set", "gpu.sm_count"),
        ("profile_show_set_unknown_link", ["profile", "show", "h100-sxm-8x-nvswitch", "--set",
                                           "fabric.links.nvlnk.bandwidth_gbps=5"], "bad_set", "--set",
         "fabric.links.nvlnk"),
        ("plot_nonexistent_dir", ["run", mlp_path, "--scheme", "no_overlap", "--trace", "{tmp}/t.json",
                                  "--plot", "/nonexistent/p.png", "-o", "{tmp}/r.json"], "bad_output", "--plot", None),
        ("output_nonexistent_dir", ["run", mlp_path, "--scheme", "no_overlap", "-o", "/nonexistent/r.txt"],
         "bad_output", "/nonexistent/r.txt", None),
        ("tune_gemm_bad", ["tune", "--hardware", "a800-8x-nvlink", "--gemm", "8192x0x4096", "--primitive",
                           "all_reduce", "--ranks", "4"], "bad_flag", "--gemm", None),
        ("tune_gemm_text", ["tune", "--hardware", "a800-8x-nvlink", "--gemm", "axbxc", "--primitive", "all_reduce",
                            "--ranks", "4"], "bad_flag", "--gemm", None),
        ("tune_ranks_negative", ["tune", "--hardware", "a800-8x-nvlink", "--gemm", "8192x8192x4096", "--primitive",
                                 "all_reduce", "--ranks", "-4"], "bad_flag", "--ranks", None),
        ("tune_dtype", ["tune", "--hardware", "a800-8x-nvlink", "--gemm", "8192x8192x4096", "--dtype", "fp7",
                        "--primitive", "all_reduce", "--ranks", "4"], "bad_flag", "--dtype", None),
        ("tune_primitive", ["tune", "--hardware", "a800-8x-nvlink", "--gemm", "8192x8192x4096", "--primitive",
                            "all_gahter", "--ranks", "4"], "bad_flag", "--primitive", None),
        ("sweep_axis_empty", ["sweep", mlp_path, "--sweep", "workload.tokens=", "-o", "{tmp}/s.csv"], "bad_flag",
         "--sweep", "workload.tokens"),
        ("sweep_axis_bad_value", ["sweep", mlp_path, "--sweep", "workload.tokens=1024,-1", "-o", "{tmp}/s.csv"],
         "bad_flag", "--sweep", "workload.tokens"),
        ("sweep_axis_unknown_key", ["sweep", mlp_path, "--sweep", "workload.tokns=1024,2048", "-o", "{tmp}/s.csv"],
         "bad_flag", "--sweep", "workload.tokns"),
        ("sweep_jobs_zero", ["sweep", mlp_path, "-j", "0", "-o", "{tmp}/s.csv"], "bad_flag", "--jobs", None),
        ("validate_missing_dir", ["validate", "/nonexistent/results"], "bad_input_file", "/nonexistent/results", None),
    ]
    for name, argv, cls, where, key in cli:
        corpus.add_cli(name, argv, cls, where, key)
    add_trace_and_model_entries(corpus, mlp_path)


def add_trace_and_model_entries(corpus, mlp_path):
    """`overlap-sim trace` on files that are not a usable profiler trace, and model configs that are not
    usable: each refused naming the file (and the key where one is at fault)."""
    kernel = '{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.0, "dur": 2.0}'
    traces = [
        ("trace_not_json", "t.json", "hello, not a trace", None),
        ("trace_truncated", "t.json", '{"traceEvents": [' + kernel[:40], None),
        ("trace_no_events", "t.json", '{"schemaVersion": 1}', None),
        ("trace_no_gpu_kernels", "t.json", '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", '
                                            '"pid": 1, "tid": 1, "ts": 1.0, "dur": 2.0}]}', None),
        ("trace_nsys_rep", "t.nsys-rep", "not an export: nsys export --type sqlite makes one", None),
        ("trace_gz_corrupt", "t.json.gz", "\x1f\x8b garbage after a gzip magic", None),
    ]
    for name, file, text, key in traces:
        corpus.add_cli(name, ["trace", "{tmp}/" + file], "bad_trace", file, key, setup=[["write", file, text]])
    rank0 = "{src}/tests/data/trace/rank0.json"
    corpus.add_cli("trace_duplicate_rank", ["trace", rank0, rank0], "bad_trace", "rank0.json", None)
    corpus.add_cli("trace_missing_file", ["trace", "/nonexistent/t.json"], "bad_trace", "/nonexistent/t.json", None)
    models = [
        ("model_config_missing_field", '{"hidden_size": 4096}', "intermediate_size"),
        ("model_config_not_json", "{hidden_size: 4096", None),
        ("model_config_kv_heads", '{"hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, '
                                  '"num_attention_heads": 32, "num_key_value_heads": 5}', "num_key_value_heads"),
    ]
    for name, text, key in models:
        corpus.add_cli(name, ["run", mlp_path, "--model", "{tmp}/config.json"], "bad_model", "config.json", key,
                       setup=[["write", "config.json", text]])
    corpus.add_cli("model_experts_for_mlp", ["run", mlp_path, "--model", "mixtral-8x7b"], "bad_model", "--model",
                   "workload.model")
    corpus.add_cli("model_unknown_name", ["run", mlp_path, "--model", "llama9"], "bad_model", "--model",
                   "workload.model")


TRAINING_SEED = 13  # the training entries' own generator (fixed, as SEED)
TRAINING_KEYS = ("pass", "recompute", "parallel")


def mutate_scenarios(corpus, rng, scenarios, run_file):
    """The random mutations of shipped scenarios (values, keys, text), from a generator of their own."""
    budget = {"out_of_range": 5, "wrong_type": 2, "bad_name": 1, "misspelt_key": 3, "duplicate_key": 1}
    for path, doc in scenarios:
        stem = os.path.splitext(os.path.basename(path))[0]
        mutate_doc(corpus, rng, doc, "scenarios", stem, run_file, "", budget)
        with open(path) as f:
            text_mutations(corpus, rng, f.read(), "scenarios", stem, run_file, 1)


def scenario_entry(corpus, base, prefix, run_file):
    """entry(name, cls, key, mod, raw=None): `base` without its sweep, changed by `mod`, added as the
    scenario `prefix + name` that must be refused at `key` (raw: the text PLACEHOLDER stands for)."""
    def entry(name, cls, key, mod, raw=None):
        d = copy.deepcopy(base)
        d.pop("sweep", None)
        mod(d)
        corpus.add_file("scenarios", prefix + name, dump(d, raw), cls, run_file, None, key)
    return entry


def set_workload(**kv):
    """A scenario change that sets workload keys."""
    return lambda d: d["workload"].update(kv)


def is_moe(doc):
    w = doc.get("workload")
    return isinstance(w, dict) and w.get("kind") == "moe"


def add_moe_step_entries(corpus, scenarios, run_file):
    """A moe layer's training step (docs/guide/moe.md "Training step"): the random mutations of the
    shipped moe step scenarios, then what a moe step refuses: recomputation, data parallelism, a scheme
    without a backward form, expert TP over more GPUs than the profile has, a misspelt pass, and column_backward (no
    column-parallel linear). Generated last, with its own seed, so every earlier entry keeps its id."""
    mutate_scenarios(corpus, random.Random(MOE_STEP_SEED), scenarios, run_file)
    if not scenarios:
        raise SystemExit("make_bad_inputs.py: no moe training-step scenario in scenarios/")
    base = scenarios[0][1]

    entry = scenario_entry(corpus, base, "moe_step_", run_file)

    entry("recompute_full", "no_effect", "workload.recompute", set_workload(recompute="full"))
    entry("data_parallel", "no_effect", "workload.parallel", set_workload(parallel={"dp": 2}))
    entry("bad_name_pass_steps", "bad_name", "workload.pass", set_workload(**{"pass": "steps"}))
    entry("scheme_moe_tile_fused", "no_form", "schemes.0", lambda d: d.update({"schemes": ["moe_tile_fused"]}))
    # moe_flashoverlap runs a step with expert TP (its wave groups feed the ETP reduce-scatter, then the
    # dispatch backward): what stays refused is an ETP group the profile cannot hold.
    entry("expert_tp_moe_flashoverlap_too_many_gpus", "out_of_range", "workload.expert_tp",
          lambda d: (d.update({"hardware": "h100-sxm-8x-nvswitch", "schemes": ["moe_flashoverlap"]}),
                     d["workload"].update({"expert_tp": 4})))
    entry("column_backward", "no_effect", "schemes.0.params.column_backward",
          lambda d: d.update({"schemes": [{"name": "no_overlap", "params": {"column_backward": "bulk"}}]}))


def is_moe_transformer(doc):
    """A transformer of a mixture-of-experts model (its HuggingFace config names experts)."""
    w = doc.get("workload")
    if not isinstance(w, dict) or w.get("kind") != "transformer" or not isinstance(w.get("model"), str):
        return False
    path = os.path.join(ROOT, "scenarios", "models", w["model"] + ".json")
    if not os.path.exists(path):
        return False
    with open(path) as f:
        config = json.load(f)
    return any(k in config for k in ("num_local_experts", "num_experts", "n_routed_experts"))


def add_moe_transformer_step_entries(corpus, scenarios, run_file):
    """A MoE transformer's training step (docs/guide/moe.md "In a MoE transformer"): the random mutations
    of the shipped scenarios, then what it refuses: data parallelism, a scheme without a backward form of
    the MoE block, expert TP (a MoE transformer folds EP onto its TP group), a misspelt pass.
    Generated last, with its own seed, so every earlier entry keeps its id."""
    mutate_scenarios(corpus, random.Random(MOE_TRANSFORMER_STEP_SEED), scenarios, run_file)
    if not scenarios:
        raise SystemExit("make_bad_inputs.py: no MoE transformer training-step scenario in scenarios/")
    base = scenarios[0][1]

    entry = scenario_entry(corpus, base, "moe_transformer_step_", run_file)

    entry("data_parallel", "no_effect", "workload.parallel", set_workload(parallel={"dp": 2}))
    entry("bad_name_pass_backwards", "bad_name", "workload.pass", set_workload(**{"pass": "backwards"}))
    entry("scheme_moe_tile_fused", "no_form", "schemes.0", lambda d: d.update({"schemes": ["moe_tile_fused"]}))
    entry("expert_tp", "bad_name", "workload.expert_tp", set_workload(expert_tp=2))


def is_expert_tp(doc):
    """A moe scenario with TP inside each expert (docs/guide/moe.md "Expert tensor parallelism")."""
    w = doc.get("workload")
    return isinstance(w, dict) and "expert_tp" in w


def add_expert_tp_entries(corpus, scenarios, run_file):
    """workload.expert_tp (a moe layer's TP inside each expert): the random mutations of the shipped
    expert-TP scenarios, then a width it does not divide, more GPUs than the profile has, wrong
    types and ranges, the old `tp` key, and what the fused schemes refuse with it (wave groups out of
    range, a training step of moe_tile_fused). Generated last, with its own seed, so every earlier entry keeps its id."""
    mutate_scenarios(corpus, random.Random(EXPERT_TP_SEED), scenarios, run_file)
    if not scenarios:
        raise SystemExit("make_bad_inputs.py: no expert-TP moe scenario in scenarios/")
    base = scenarios[0][1]

    entry = scenario_entry(corpus, base, "expert_tp_", run_file)

    entry("not_dividing_d_ffn", "out_of_range", "workload.expert_tp", set_workload(d_ffn_expert=14335))
    entry("more_gpus_than_profile", "out_of_range", "workload.expert_tp", set_workload(expert_tp=4))
    for tok in ("0", "-2", "1.5", "1e18", "abc", ".nan"):
        entry(f"bad_value_{tok}", "out_of_range" if tok not in ("abc", ".nan") else "wrong_type", "workload.expert_tp",
              set_workload(expert_tp=PLACEHOLDER), tok)
    entry("old_tp_key", "bad_value", "workload.tp", lambda d: (d["workload"].pop("expert_tp"),
                                                                d["workload"].update({"tp": 2})))
    # Every moe scheme has an expert-TP form: what stays refused with it is moe_flashoverlap's wave groups
    # out of range and moe_tile_fused in a training step (no backward form).
    entry("scheme_moe_flashoverlap_group_waves", "out_of_range", "schemes.0.params.group_waves",
          lambda d: d.update({"schemes": [{"name": "moe_flashoverlap", "params": {"group_waves": -1}}]}))
    entry("scheme_moe_tile_fused_step", "no_form", "schemes.0",
          lambda d: (d.update({"schemes": ["moe_tile_fused"]}), d["workload"].update({"pass": "step"})))


def is_training(doc):
    """A scenario whose workload has a training key (docs/guide/training.md)."""
    w = doc.get("workload")
    return isinstance(w, dict) and any(k in w for k in TRAINING_KEYS)


def add_training_entries(corpus, training, run_file):
    """The training keys (workload.pass, .recompute, .parallel.*; docs/guide/training.md): the random
    mutations of the shipped step scenarios, then every key with a wrong type, a value out of range, an
    unknown name, a misspelt name, a key that would do nothing, and dp x tp larger than the profile."""
    mutate_scenarios(corpus, random.Random(TRAINING_SEED), training, run_file)
    by_name = {os.path.splitext(os.path.basename(p))[0]: d for p, d in training}
    step = by_name.get("llama3-70b-tp8-train-step")
    fsdp = by_name.get("llama3-70b-tp8xdp2-fsdp-step")
    if step is None or fsdp is None:
        raise SystemExit("make_bad_inputs.py: the training-step scenarios are missing from scenarios/")

    def entry(base, name, cls, key, mod, raw=None):
        d = copy.deepcopy(base)
        d.pop("sweep", None)
        mod(d)
        corpus.add_file("scenarios", "training_" + name, dump(d, raw), cls, run_file, None, key)

    def set_workload(key, value):
        return lambda d: d["workload"].update({key: value})

    def set_parallel(key, value):
        return lambda d: d["workload"]["parallel"].update({key: value})

    # workload.pass and workload.recompute: one of a fixed set of names.
    for key, bad in (("pass", "stpe"), ("pass", "train"), ("recompute", "partial"), ("recompute", "selctive")):
        entry(step, f"bad_name_{key}_{bad}", "bad_name", f"workload.{key}", set_workload(key, bad))
    for key in ("pass", "recompute"):
        for tok in ("[step]", "{a: 1}"):
            entry(step, f"wrong_type_{key}_{tok}", "wrong_type", f"workload.{key}", set_workload(key, PLACEHOLDER), tok)
    # Recomputation with no backward to run it in.
    entry(step, "recompute_in_forward", "no_effect", "workload.recompute", set_workload("pass", "forward"))
    # parallel must be a map.
    for tok in ("2", "[]", "[2, zero3]"):
        entry(fsdp, f"wrong_type_parallel_{tok}", "wrong_type", "workload.parallel", set_workload("parallel", PLACEHOLDER), tok)
    # parallel.dp: a replica count (1 .. 65536), and dp x tp at most the profile's GPUs.
    for tok in ("0", "-1", "1.5", "1e18", "99999999999999999999", "65537", ".nan", "abc", "[2]", "{a: 1}"):
        cls = "out_of_range" if tok in ("0", "-1", "1e18", "99999999999999999999", "65537") else "wrong_type"
        entry(fsdp, f"{cls}_parallel.dp_{tok}", cls, "workload.parallel.dp", set_parallel("dp", PLACEHOLDER), tok)
    entry(fsdp, "dp_x_tp_24_of_16_gpus", "too_many_gpus", "workload.parallel.dp", set_parallel("dp", 3))
    entry(step, "dp_x_tp_16_of_8_gpus", "too_many_gpus", "workload.parallel.dp",
          lambda d: d["workload"].update(parallel={"dp": 2}))
    # parallel.fsdp: none | zero1 | zero2 | zero3.
    for bad in ("zero4", "fsdp", "full_shard"):
        entry(fsdp, f"bad_name_parallel.fsdp_{bad}", "bad_name", "workload.parallel.fsdp", set_parallel("fsdp", bad))
    entry(fsdp, "wrong_type_parallel.fsdp", "wrong_type", "workload.parallel.fsdp", set_parallel("fsdp", PLACEHOLDER),
          "[zero3]")
    # parallel.bucket_mb: MiB in [0.001, 1048576], and only where buckets exist (not ZeRO-3).
    ddp = lambda extra: lambda d: d["workload"].update(parallel=dict({"dp": 2}, **extra))  # noqa: E731
    for tok in ("0", "-1", "1e-9", "1e300", ".nan", ".inf", "abc", "[25]"):
        cls = "wrong_type" if tok in ("abc", "[25]") else "out_of_range"
        entry(fsdp, f"{cls}_parallel.bucket_mb_{tok}", cls, "workload.parallel.bucket_mb", ddp({"bucket_mb": PLACEHOLDER}), tok)
    entry(fsdp, "bucket_mb_with_zero3", "no_effect", "workload.parallel.bucket_mb", set_parallel("bucket_mb", 25))
    # parallel.prefetch: layers in [0, 1024], and only for ZeRO-3's per-layer gathers.
    for tok in ("-1", "1.5", "1025", ".nan", "abc", "[1]"):
        cls = "out_of_range" if tok in ("-1", "1025") else "wrong_type"
        entry(fsdp, f"{cls}_parallel.prefetch_{tok}", cls, "workload.parallel.prefetch", set_parallel("prefetch", PLACEHOLDER), tok)
    entry(fsdp, "prefetch_without_zero3", "no_effect", "workload.parallel.prefetch", ddp({"prefetch": 2}))
    # parallel.grad_dtype: a dtype name.
    for bad in ("fp64", "float32"):
        entry(fsdp, f"bad_name_parallel.grad_dtype_{bad}", "bad_name", "workload.parallel.grad_dtype",
              set_parallel("grad_dtype", bad))
    # Keys that would do nothing with one replica.
    for key, value in (("fsdp", "zero3"), ("bucket_mb", 25), ("prefetch", 1), ("grad_dtype", "bf16")):
        entry(step, f"dp1_{key}", "no_effect", f"workload.parallel.{key}",
              lambda d, key=key, value=value: d["workload"].update(parallel={"dp": 1, key: value}))
    # Misspelt keys, next to the real one or alone: never ignored.
    for key in ("pas", "recomptue", "paralel"):
        entry(step, f"misspelt_key_workload.{key}", "misspelt_key", f"workload.{key}", set_workload(key, "step"))
    for key in ("dpp", "fsdb", "bucket_md", "prefech", "grad_dtyp"):
        entry(fsdp, f"misspelt_key_parallel.{key}", "misspelt_key", f"workload.parallel.{key}", set_parallel(key, 1))
    # A scheme with no backward form named for a step (decode's schemes): refused, never run as no_overlap.
    entry(step, "scheme_without_backward", "no_backward", "schemes.0", lambda d: d.update(schemes=["dtp"]))
    entry(fsdp, "scheme_without_backward_dp", "no_backward", "schemes.0", lambda d: d.update(schemes=["tp_baseline"]))


SMALL_SCENARIO = ("hardware: h100-sxm-8x-nvswitch\nworkload:\n  kind: gemm_collective\n  tp: 4\n  m: 2048\n"
                  "  n: 4096\n  k: 2048\n  primitive: all_reduce\nschemes:\n  - no_overlap\n")
H100 = "{src}/scenarios/hardware/h100-sxm-8x-nvswitch.yaml"
RANK0 = "{src}/tests/data/trace/rank0.json"
MODEL = "{src}/scenarios/models/llama-3.1-8b.json"


def add_output_input_entries(corpus, mlp_path):
    """An output never replaces an input: every command that writes, aimed at a file it reads (the
    scenario, a profile named on the command line or in the scenario, a model config, a trace, a base
    profile), also through a symbolic or a hard link; refused, exit 2, the input as it was."""
    scen = [["write", "s.yaml", SMALL_SCENARIO]]
    keep_scen = [{"path": "s.yaml", "text": SMALL_SCENARIO}]
    hw = [["copy", H100, "hw.yaml"]]
    keep_hw = [{"path": "hw.yaml", "same_as": H100}]
    trace = [["copy", RANK0, "t.json"]]
    keep_trace = [{"path": "t.json", "same_as": RANK0}]
    fit = ["profile", "fit", "{tmp}/t.json", "--hardware"]
    op = ["--gemm", "4096x4096x4096", "--primitive", "all_reduce", "--ranks", "4", "--search", "optimal"]
    indirect = SMALL_SCENARIO.replace("hardware: h100-sxm-8x-nvswitch", "hardware: hw.yaml")
    cases = [
        ("run_o_scenario", ["run", "{tmp}/s.yaml", "-o", "{tmp}/s.yaml"], "-o", scen, keep_scen),
        ("run_trace_symlink", ["run", "{tmp}/s.yaml", "--trace", "{tmp}/link.yaml"], "--trace",
         scen + [["symlink", "s.yaml", "link.yaml"]], keep_scen + [{"path": "link.yaml", "type": "symlink"}]),
        ("run_graphviz_hardlink", ["run", "{tmp}/s.yaml", "--graphviz", "{tmp}/hard.yaml"], "--graphviz",
         scen + [["hardlink", "s.yaml", "hard.yaml"]], keep_scen),
        ("run_o_hardware", ["run", "{tmp}/s.yaml", "--hardware", "{tmp}/hw.yaml", "-o", "{tmp}/hw.yaml"], "-o",
         scen + hw, keep_hw),
        ("run_o_hardware_of_scenario", ["run", "{tmp}/i.yaml", "-o", "{tmp}/hw.yaml"], "-o",
         [["write", "i.yaml", indirect]] + hw, keep_hw),
        ("run_o_model", ["run", mlp_path, "--scheme", "no_overlap", "--model", "{tmp}/config.json", "-o",
                         "{tmp}/config.json"], "-o", [["copy", MODEL, "config.json"]],
         [{"path": "config.json", "same_as": MODEL}]),
        ("sweep_o_scenario", ["sweep", "{tmp}/s.yaml", "--sweep", "workload.m=2048,4096", "-o", "{tmp}/s.yaml"], "-o",
         scen, keep_scen),
        ("sweep_checkpoint_scenario", ["sweep", "{tmp}/r.csv.partial", "--sweep", "workload.m=2048,4096", "-o",
                                       "{tmp}/r.csv"], "checkpoint", [["write", "r.csv.partial", SMALL_SCENARIO]],
         [{"path": "r.csv.partial", "text": SMALL_SCENARIO}]),
        ("trace_o_trace", ["trace", "{tmp}/t.json", "-o", "{tmp}/t.json"], "-o", trace, keep_trace),
        ("fit_o_trace", fit + ["h100-sxm-8x-nvswitch", "-o", "{tmp}/t.json"], "-o", trace, keep_trace),
        ("fit_report_trace", fit + ["h100-sxm-8x-nvswitch", "-o", "{tmp}/fit.yaml", "--report", "{tmp}/t.json"],
         "--report", trace, keep_trace),
        ("fit_o_base", fit + ["{tmp}/hw.yaml", "-o", "{tmp}/hw.yaml"], "-o", trace + hw, keep_hw),
        ("tune_export_flashoverlap_hardware", ["tune", "--hardware", "{tmp}/hw.yaml"] + op +
         ["--export-flashoverlap", "{tmp}/hw.yaml"], "--export-flashoverlap", hw, keep_hw),
        ("tune_o_hardware", ["tune", "--hardware", "{tmp}/hw.yaml"] + op + ["-o", "{tmp}/hw.yaml"], "-o", hw, keep_hw),
        # The MLP scenario, where te_userbuffers applies: refused for replacing it, not for the workload.
        ("tune_export_te_scenario", ["tune", "{tmp}/m.yaml", "-j", "1", "--export", "te-userbuffers", "{tmp}/m.yaml"],
         "--export", [["copy", mlp_path, "m.yaml"]], [{"path": "m.yaml", "same_as": mlp_path}]),
        ("collective_export_hardware", ["collective", "all_reduce", "--hardware", "{tmp}/hw.yaml", "-e", "1M",
                                        "--export", "nccl-tuner", "{tmp}/hw.yaml"], "--export", hw, keep_hw),
        ("collective_o_hardware", ["collective", "all_reduce", "--hardware", "{tmp}/hw.yaml", "-e", "1M", "-o",
                                   "{tmp}/hw.yaml"], "-o", hw, keep_hw),
    ]
    for name, argv, where, setup, keep in cases:
        corpus.add_cli(f"output_replaces_input_{name}", argv, "output_replaces_input", where, None, setup, keep)


def add_out_of_memory_entries(corpus, mlp_path):
    """Running out of memory is a message naming what ran, exit 2: a run whose CTA-level trace needs
    gigabytes, under a 250 MB address-space limit."""
    corpus.add_cli("out_of_memory_cta_trace", ["run", mlp_path, "--scheme", "no_overlap", "--tokens", "1048576",
                                               "--trace-level", "cta", "--trace", "{tmp}/t.json"],
                   "out_of_memory", "out of memory while running", None, limit_as_kb=250000)


def add_bounded_message_entries(corpus, mlp_path):
    """Messages stay short whatever the input holds: a value of 1 MB is quoted to a line's worth and
    counted; a trace of world_size 16777215 warns in one line (docs/reference/bad-input.md)."""
    # 1 MB: yaml-cpp takes about 0.3 s per MB to scan a scalar, and the entry must end within 5 s under
    # the sanitizers too.
    big = SMALL_SCENARIO.replace("m: 2048", "m: {repeat:7:1000000}")
    bounded = 1024
    corpus.add_cli("bounded_scalar_1mb", ["run", "{tmp}/big.yaml"], "bounded_message", "big.yaml", "workload.m",
                   setup=[["write", "big.yaml", big]], max_stderr_bytes=bounded)
    corpus.add_cli("bounded_scheme_name_1mb", ["run", "{tmp}/big.yaml"], "bounded_message", "big.yaml", "schemes.0",
                   setup=[["write", "big.yaml", SMALL_SCENARIO.replace("- no_overlap", "- {repeat:z:1000000}")]],
                   max_stderr_bytes=bounded)
    corpus.add_cli("bounded_set_100kb", ["run", mlp_path, "--set", "workload.tokens={repeat:9:100000}"],
                   "bounded_message", "--set", "workload.tokens", max_stderr_bytes=bounded)
    corpus.add_cli("bounded_unknown_command_100kb", ["{repeat:z:100000}"], "bounded_message", "unknown command", None,
                   max_stderr_bytes=bounded)
    corpus.add_cli("bounded_unknown_flag_100kb", ["run", "--{repeat:z:100000}"], "bounded_message", "--zzz", None,
                   max_stderr_bytes=bounded)
    with open(os.path.join(ROOT, "tests", "data", "trace", "rank0.json")) as f:
        wide = f.read().replace('"world_size": 2', '"world_size": 16777215')
    corpus.add_cli("bounded_warning_world_size", ["trace", "{tmp}/t.json"], "bounded_message",
                   "no trace of rank(s) 1-16777214", None, setup=[["write", "t.json", wide]], exit=0,
                   max_stderr_bytes=512)


def add_network_memory_trace_entries(corpus, mlp_path):
    """The inputs added with the NICs of a multi-node profile, the step's memory check and the trace's
    own kernel patterns: each refused naming the profile or flag and the key."""
    base = ["run", mlp_path, "--scheme", "no_overlap", "--hardware", "h100-2node-ib400", "--set"]
    for value in ["3", "16", "-1", "1.5", "abc"]:
        corpus.add_cli(f"nics_per_node_{value}", base + [f"hardware.fabric.nics_per_node={value}"], "topology",
                       "h100-2node-ib400", "hardware.fabric.nics_per_node")
    for value in ["0", "1.5", "nan"]:
        corpus.add_cli(f"nic_efficiency_{value}", base + [f"hardware.fabric.nic_efficiency={value}"], "out_of_range",
                       "h100-2node-ib400", "hardware.fabric.nic_efficiency")
    corpus.add_cli("nics_per_node_one_node", ["run", mlp_path, "--scheme", "no_overlap", "--set",
                                              "hardware.fabric.nics_per_node=8"], "topology", "--set",
                   "hardware.fabric.nics_per_node")
    corpus.add_cli("fit_only_does_not_fit", ["run", "{src}/scenarios/llama3-70b-tp8-train-step.yaml", "--fit-only"],
                   "work_budget", "llama3-70b-tp8-train-step.yaml", "workload")
    corpus.add_cli("trace_comm_kernel_regex", ["trace", RANK0, "--comm-kernel", "nccl[("], "bad_trace_flag",
                   "--comm-kernel", None)
    corpus.add_cli("trace_compute_kernel_empty", ["trace", RANK0, "--compute-kernel", ""], "bad_trace_flag",
                   "--compute-kernel", None)


def add_placeholder_entries(corpus, mlp_path):
    """A profile's placeholders: section (guessed values and their plausible ranges): every malformed
    entry refused at the profile's file, line and key before anything runs."""
    profile = ("gpu: {sm_count: 132, peak_tflops: {bf16: 989}, gemm_efficiency: 0.8}\n"
               "fabric: {num_gpus: 8, links: {nvlink: {bandwidth_gbps: 450}}}\n"
               "transports: {sm_copy: {cta_gbps: 25}}\n"
               "placeholders:\n")
    cta = "placeholders.transports.sm_copy.cta_gbps"
    cases = [
        ("low_above_high", "  transports.sm_copy.cta_gbps: {range: [75, 25], source: s}\n", cta + ".range"),
        ("three_values", "  transports.sm_copy.cta_gbps: {range: [25, 50, 75], source: s}\n", cta + ".range"),
        ("outside_key_range", "  transports.sm_copy.cta_gbps: {range: [-1, 75], source: s}\n", cta + ".range.0"),
        ("fraction_above_one", "  gpu.gemm_efficiency: {range: [0.6, 1.5], source: s}\n",
         "placeholders.gpu.gemm_efficiency.range.1"),
        ("not_a_number", "  transports.sm_copy.cta_gbps: {range: [25, abc], source: s}\n", cta + ".range.1"),
        ("unknown_key", "  gpu.no_such_key: {range: [1, 2], source: s}\n", "placeholders.gpu.no_such_key"),
        ("string_key", "  gpu.name: {range: [1, 2], source: s}\n", "placeholders.gpu.name"),
        ("key_not_set", "  gpu.gemm_tile_us: {range: [1, 2], source: s}\n", "placeholders.gpu.gemm_tile_us"),
        ("missing_source", "  transports.sm_copy.cta_gbps: {range: [25, 75]}\n", cta + ".source"),
        ("misspelt_field", "  transports.sm_copy.cta_gbps: {range: [25, 75], source: s, sorce: t}\n", cta + ".sorce"),
        ("not_a_map", "  transports.sm_copy.cta_gbps: [25, 75]\n", cta),
    ]
    for name, section, key in cases:
        corpus.add_cli(f"placeholder_{name}", ["run", mlp_path, "--scheme", "no_overlap", "--hardware", "{tmp}/p.yaml"],
                       "placeholder", "p.yaml", key, setup=[["write", "p.yaml", profile + section]])


def add_input_hardening_entries(corpus, mlp_path):
    """Config.json, --set and the old survivors read strictly; predictions that never wrap; the MoE work
    budget (docs/reference/limits.md "Scenarios, model configs and predictions"). Each refused naming
    the file or flag and the key."""
    llama = ('{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336, '
             '"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_act": "silu"')
    configs = [
        # A number beyond a double in a key that is not read (nlohmann's out_of_range 406).
        ("config_number_overflow", llama + ', "rope_theta": 1e999}', "rope_theta"),
        ("config_number_overflow_nested", llama + ', "rope_scaling": {"factor": -1e400}}', "rope_scaling.factor"),
        ("config_duplicate_key", llama + ', "hidden_size": 8192}', "hidden_size"),
        ("config_duplicate_nested_key", llama + ', "rope_scaling": {"factor": 8.0, "factor": 4.0}}',
         "rope_scaling.factor"),
        ("config_experts_disagree", llama + ', "num_local_experts": 8, "num_experts": 16, "num_experts_per_tok": 2}',
         "num_experts"),
        ("config_top_k_without_experts", llama + ', "num_experts_per_tok": 2}', "num_experts_per_tok"),
        ("config_linear_attention", llama + ', "layer_types": ["linear_attention", "full_attention"]}', "layer_types"),
        ("config_linear_widths", llama + ', "linear_num_value_heads": 32}', "linear_num_value_heads"),
        ("config_sliding_window", llama + ', "sliding_window": 4096}', "sliding_window"),
        ("config_chunked_attention", llama + ', "attention_chunk_size": 8192}', "attention_chunk_size"),
        ("config_shared_expert_width", llama + ', "num_experts": 60, "num_experts_per_tok": 4, '
         '"moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5000}', "shared_expert_intermediate_size"),
        ("config_plain_gelu_mlp", '{"architectures": ["GPTNeoXForCausalLM"], "hidden_size": 6144, '
         '"intermediate_size": 24576, "num_hidden_layers": 44, "num_attention_heads": 64, "hidden_act": "gelu"}',
         "hidden_act"),
        ("config_text_config_missing", '{"architectures": ["LlavaForConditionalGeneration"], '
         '"text_config": {"hidden_size": 4096}}', "text_config.intermediate_size"),
        ("config_text_config_disagrees", '{"hidden_size": 1024, "text_config": {"hidden_size": 4096, '
         '"intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32}}', "hidden_size"),
    ]
    for name, text, key in configs:
        corpus.add_cli(name, ["run", mlp_path, "--model", "{tmp}/config.json"], "model_config_strict", "config.json",
                       key, setup=[["write", "config.json", text]])
    # A checkpoint directory without its config.json; an empty --model, --hardware or --trace-ranks.
    corpus.add_cli("model_dir_without_config", ["run", mlp_path, "--model", "{tmp}/ckpt"], "model_config_strict",
                   "ckpt/config.json", None, setup=[["mkdir", "ckpt"]])
    corpus.add_cli("model_empty", ["run", mlp_path, "--model", ""], "empty_flag", "--model", None)
    corpus.add_cli("hardware_empty", ["run", mlp_path, "--hardware", ""], "empty_flag", "--hardware", None)
    corpus.add_cli("trace_ranks_empty", ["run", mlp_path, "--trace", "{tmp}/t.json", "--trace-ranks", ""],
                   "empty_flag", "--trace-ranks", None)
    # --set flow maps that repeat a key.
    corpus.add_cli("set_flow_map_duplicate_param", ["run", mlp_path, "--set",
                                                    "schemes=[{name: data_slicing, params: {chunks: 2, chunks: 4}}]"],
                   "duplicate_key", "--set", "schemes.0.params.chunks")
    corpus.add_cli("set_flow_map_duplicate_workload", ["run", mlp_path, "--set",
                                                       "workload={kind: mlp_tpsp, tp: 8, tp: 4, tokens: 8192, "
                                                       "d_model: 8192, d_ffn: 28672}"],
                   "duplicate_key", "--set", "workload.tp")
    # Key-value heads TP can neither split nor replicate (6 on 4 ranks).
    attention = ("hardware: h100-sxm-8x-nvswitch\nworkload:\n  kind: attention_tpsp\n  tp: 4\n  batch: 1\n"
                 "  seq: 4096\n  d_model: 6144\n  heads: 24\n  kv_heads: 6\nschemes: [no_overlap]\n")
    corpus.add_cli("kv_heads_not_split_by_tp", ["run", "{tmp}/a.yaml"], "heads", "a.yaml", "workload.kv_heads",
                   setup=[["write", "a.yaml", attention]])
    # MoE past the EP work budget: 512^2 rank pairs (EP 256 is the cap).
    moe = ("hardware: h100-64node-ib400-rail\nworkload:\n  kind: moe\n  experts: 512\n  top_k: 8\n  d_model: 7168\n"
           "  d_ffn_expert: 2048\n  tokens: 4096\n  ep: 512\nschemes: [no_overlap]\n")
    corpus.add_cli("moe_ep_512_over_budget", ["run", "{tmp}/m.yaml"], "work_budget", "m.yaml", "workload.ep",
                   setup=[["write", "m.yaml", moe]])
    # A GEMM whose time leaves int64 picoseconds on the slowest GPU the ranges allow.
    corpus.add_cli("gemm_time_overflow", ["run", "{tmp}/s.yaml", "--set", "hardware.gpu.peak_tflops.bf16=0.001",
                                          "--set", "workload.m=65536", "--set", "workload.n=65536", "--set",
                                          "workload.k=16777216"],
                   "prediction_overflow", "GEMM 65536 x 65536 x 16777216", None,
                   setup=[["write", "s.yaml", SMALL_SCENARIO.replace("tp: 4", "tp: 4\n  dtype: bf16")]])
    # The old survivors: a sweep value `run` ignored, a --sweep axis given twice, a % directive after
    # "...", duplicate keys in measurements.json, schemes/ as a file in a results directory.
    corpus.add_cli("run_checks_sweep_values", ["run", "{tmp}/s.yaml"], "sweep", "s.yaml", "sweep.workload.tp",
                   setup=[["write", "s.yaml", SMALL_SCENARIO + "sweep:\n  workload.tp: [4, 16]\n"]])
    corpus.add_cli("sweep_axis_twice", ["sweep", mlp_path, "--sweep", "workload.tp=4,8", "--sweep", "workload.tp=2"],
                   "sweep", "--sweep workload.tp=2", None)
    corpus.add_cli("yaml_directive_after_end", ["run", "{tmp}/s.yaml"], "yaml", "s.yaml:12", None,
                   setup=[["write", "s.yaml", SMALL_SCENARIO + "...\n%YAML 1.2\n"]])
    corpus.add_cli("measurements_duplicate_key", ["validate", "{tmp}/r"], "duplicate_key", "measurements.json",
                   "schema", setup=[["mkdir", "r"], ["write", "r/measurements.json",
                                                     '{"schema": "overlap-calibrate/1", "schema": "x", '
                                                     '"measurements": []}']])
    corpus.add_cli("results_schemes_is_a_file", ["validate", "{tmp}/r"], "results_dir", "schemes", None,
                   setup=[["mkdir", "r"], ["write", "r/schemes", "a file, not a folder\n"]])


def add_trace_hardening_entries(corpus, mlp_path):
    """Traces whose events cannot be read as written (refused under --strict, counted without it),
    distributedInfo out of range, non-regular files, gzip with bytes after the stream and a gzip bomb,
    an over-long JSON token, Nsight Systems exports with text / NULL / backward times or a view where a
    table belongs, a kernel name that is not UTF-8, and profile fit on such traces or fitting a GEMM
    past the profile schema's range. Binary files (gzip, SQLite) are corpus files under traces/."""
    import gzip as gz
    gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"

    def kineto(extra="", top=""):
        return ('{' + top + '"traceEvents": [{"ph": "X", "cat": "kernel", "name": "' + gemm + '", "pid": 0, "tid": 7, '
                '"ts": 100, "dur": 100}' + extra + ']}')

    def kernel(fields):
        return ', {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7' + fields + '}'

    events = [
        ("dur_negative", ', "ts": 300, "dur": -5', "dur"),
        ("dur_missing", ', "ts": 300', "dur"),
        ("dur_text", ', "ts": 300, "dur": "12abc"', "dur"),
        ("dur_null", ', "ts": 300, "dur": null', "dur"),
        ("ts_missing", ', "dur": 5', "ts"),
        ("ts_negative", ', "ts": -10, "dur": 5', "ts"),
        ("ts_1e300", ', "ts": 1e300, "dur": 5', "ts"),
        ("ts_past_uint64", ', "ts": 99999999999999999999, "dur": 5', "ts"),
        ("end_past_2_62", ', "ts": 4000000000000000, "dur": 1000000000000000', "dur"),
    ]
    for name, fields, field in events:
        text = kineto(kernel(fields))
        corpus.add_cli(f"trace_strict_{name}", ["trace", "{tmp}/t.json", "--strict"], "bad_trace", "t.json",
                       f"traceEvents.1.{field}", setup=[["write", "t.json", text]])
    # Without --strict the same events are counted and named in a warning (exit 0, bounded stderr).
    corpus.add_cli("trace_skipped_counted", ["trace", "{tmp}/t.json"], "bad_trace", "could not be read as written",
                   None, setup=[["write", "t.json", kineto("".join(kernel(f) for _, f, _ in events))]], exit=0,
                   max_stderr_bytes=512)
    corpus.add_cli("fit_strict_dur_negative", ["profile", "fit", "{tmp}/t.json", "--strict", "--hardware",
                                               "h100-sxm-8x-nvswitch", "-o", "{tmp}/fit.yaml"], "bad_trace", "t.json",
                   "traceEvents.1.dur", setup=[["write", "t.json", kineto(kernel(', "ts": 300, "dur": -5'))]])
    for name, info, key in [("rank_fraction", '{"rank": 0.5, "world_size": 2}', "rank"),
                            ("rank_negative", '{"rank": -1, "world_size": 2}', "rank"),
                            ("rank_text", '{"rank": "one", "world_size": 2}', "rank"),
                            ("world_size_zero", '{"rank": 0, "world_size": 0}', "world_size"),
                            ("world_size_2_24_plus_1", '{"rank": 0, "world_size": 16777217}', "world_size")]:
        corpus.add_cli(f"trace_distributed_{name}", ["trace", "{tmp}/t.json"], "bad_trace", "t.json",
                       f"distributedInfo.{key}", setup=[["write", "t.json", kineto(top='"distributedInfo": ' + info + ', ')]])
    corpus.add_cli("trace_fifo", ["trace", "{tmp}/t.json"], "bad_trace", "FIFO", None, setup=[["mkfifo", "t.json"]],
                   keep=[{"path": "t.json", "type": "fifo"}])
    corpus.add_cli("fit_fifo", ["profile", "fit", "{tmp}/t.json", "--hardware", "h100-sxm-8x-nvswitch", "-o",
                                "{tmp}/fit.yaml"], "bad_trace", "FIFO", None, setup=[["mkfifo", "t.json"]],
                   keep=[{"path": "t.json", "type": "fifo"}])
    corpus.add_cli("trace_directory", ["trace", "{tmp}/d"], "bad_trace", "is a directory", None, setup=[["mkdir", "d"]])
    corpus.add_cli("trace_token_past_16mib", ["trace", "{tmp}/t.json"], "bad_trace", "longer than 16 MiB", None,
                   setup=[["write", "t.json", kineto(kernel(', "ts": 1, "dur": 1, "args": {"x": "{repeat:a:16777300}"}'))]])
    # A GEMM measured at 2 s: gemm_profiles[].duration_us is at most 1e6 us, so the fit is refused.
    fit_events = []
    for i in range(1, 4):
        t = 1000 + i * 2000001
        fit_events.append('{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": 100, "ts": %d, '
                          '"dur": 0.2, "args": {"External id": %d, "Input Dims": [[4096, 4096], [4096, 4096]], '
                          '"Input type": ["c10::BFloat16", "c10::BFloat16"]}}' % (t - 1, i))
        fit_events.append('{"ph": "X", "cat": "kernel", "name": "%s", "pid": 0, "tid": 7, "ts": %d, "dur": 2000000, '
                          '"args": {"External id": %d, "device": 0, "stream": 7, "correlation": %d}}' % (gemm, t, i, i))
    corpus.add_cli("fit_gemm_past_schema", ["profile", "fit", "{tmp}/t.json", "--hardware", "h100-sxm-8x-nvswitch", "-o",
                                            "{tmp}/fit.yaml"], "bad_fit", "fit.yaml", "gemm_profiles.0.duration_us",
                   setup=[["write", "t.json", '{"traceEvents": [' + ", ".join(fit_events) + ']}']])

    doc = kineto(kernel(', "ts": 300, "dur": 5'))
    corpus.add_file("traces", "trace_gzip_trailing_bytes", gz.compress(doc.encode(), mtime=0) + b"garbage", "bad_trace",
                    ["trace", "{file}"], "bytes after the end of the gzip stream", None, binary=True, ext=".json.gz")
    bomb = b'{"traceEvents": [' + b" " * (100 << 20) + b"]}"
    corpus.add_file("traces", "trace_gzip_bomb_100mib", gz.compress(bomb, compresslevel=9, mtime=0), "bad_trace",
                    ["trace", "{file}"], "gzip bomb", None, binary=True, ext=".json.gz")

    add_nsys_hardening_entries(corpus, gemm)


def add_nsys_hardening_entries(corpus, gemm):
    """Nsight Systems exports with text / NULL / backward times, a view where a table belongs, and a
    kernel name that is not UTF-8 (part of add_trace_hardening_entries)."""
    import sqlite3
    import tempfile
    schema = ("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);"
              "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, "
              "correlationId INTEGER, globalPid INTEGER, demangledName INTEGER);"
              "INSERT INTO StringIds VALUES (1, '" + gemm + "');"
              "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100000, 200000, 0, 1, NULL, 1);")

    def sqlite_bytes(sql):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "e.sqlite")
            db = sqlite3.connect(path)
            db.execute("PRAGMA page_size = 512")
            db.executescript(schema + sql)
            db.commit()
            db.execute("VACUUM")
            db.close()
            with open(path, "rb") as f:
                return f.read()

    rows = [("start_text", "('soon', 400000, 0, 2, NULL, 1)", "start"),
            ("start_null", "(NULL, 400000, 0, 2, NULL, 1)", "start"),
            ("end_before_start", "(500000, 400000, 0, 2, NULL, 1)", "end"),
            ("end_real", "(300000, 450000.5, 0, 2, NULL, 1)", "end"),
            ("device_real", "(300000, 400000, 1.5, 2, NULL, 1)", "deviceId")]
    for name, row, column in rows:
        corpus.add_file("traces", f"nsys_strict_{name}",
                        sqlite_bytes(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES {row};"), "bad_trace",
                        ["trace", "{file}", "--strict"], None, f"CUPTI_ACTIVITY_KIND_KERNEL.{column}", binary=True,
                        ext=".sqlite")
    corpus.add_file("traces", "nsys_recursive_view",
                    sqlite_bytes("DROP TABLE StringIds; CREATE VIEW StringIds AS WITH RECURSIVE c(id, value) AS "
                                 "(SELECT 1, 'x' UNION ALL SELECT id + 1, value FROM c) SELECT id, value FROM c;"),
                    "bad_trace", ["trace", "{file}"], None, "StringIds", binary=True, ext=".sqlite")
    # A kernel name that is not UTF-8, with --format json: written as U+FFFD (exit 0, no internal error).
    corpus.add_file("traces", "nsys_name_not_utf8",
                    sqlite_bytes("UPDATE StringIds SET value = CAST('sm90_xmma_gemm_' AS BLOB) || X'FF';"), "bad_trace",
                    ["trace", "{file}", "--format", "json", "-o", "{tmp}/r.json"], "wrote", None, binary=True,
                    exit_code=0, ext=".sqlite")


# Generators whose entries follow every mutation; `--append` runs only these. A new generator goes at
# the end, so that `tools/make_bad_inputs.py --append` adds its entries and keeps the committed ones.
def add_step_kernel_entries(corpus, mlp_path):
    """The keys of a dense transformer step's kernels (cost_model/step_kernels.hpp) where they do not
    apply, or with a value they do not take; and a real-size step that does not fit (--fit-only). Each
    refused naming the file, line and key."""
    step = ("hardware: h100-sxm-8x-nvswitch\nworkload:\n  kind: transformer\n  tp: 8\n  model: llama3-70b\n"
            "  layers: 2\n  batch: 1\n  seq: 1024\n  pass: step\n")
    cases = [
        # A single layer, a forward, a MoE transformer: none runs the step's kernels.
        ("step_kernels_on_mlp", "run", mlp_path, ["--set", "workload.fused_elementwise=te"], None,
         "workload.fused_elementwise"),
        ("step_kernels_on_forward", "run", "{tmp}/s.yaml", [], step.replace("pass: step", "pass: forward") +
         "  fused_elementwise: none\nschemes: [no_overlap]\n", "workload.fused_elementwise"),
        ("step_kernels_on_moe", "run", "{tmp}/s.yaml", [],
         step.replace("llama3-70b", "mixtral-8x7b").replace("tp: 8", "tp: 4") + "  dropout: 0.1\nschemes: [no_overlap]\n",
         "workload.dropout"),
        ("step_fp8_scaling_on_bf16", "run", "{tmp}/s.yaml", [], step + "  fp8_scaling: rowwise\nschemes: [no_overlap]\n",
         "workload.fp8_scaling"),
        ("step_fusion_unknown", "run", "{tmp}/s.yaml", [], step + "  fused_elementwise: apex\nschemes: [no_overlap]\n",
         "workload.fused_elementwise"),
        ("step_dropout_out_of_range", "run", "{tmp}/s.yaml", [], step + "  dropout: 1.5\nschemes: [no_overlap]\n",
         "workload.dropout"),
        ("step_vocab_negative", "run", "{tmp}/s.yaml", [], step + "  vocab: -1\nschemes: [no_overlap]\n",
         "workload.vocab"),
    ]
    for name, cmd, path, extra, text, key in cases:
        setup = [["write", "s.yaml", text]] if text else None
        where = "s.yaml" if text else "--set"
        corpus.add_cli(name, [cmd, path] + extra, "step_kernels", where, key, setup=setup)
    # The real-size 70B step on one node's HBM with no data parallelism: it does not fit.
    corpus.add_cli("step_real_size_does_not_fit", ["run", "{src}/scenarios/llama3-70b-tp8xfsdp32-full-step.yaml",
                                                   "--fit-only", "--set", "workload.parallel={dp: 1}"],
                   "out_of_hbm", "llama3-70b-tp8xfsdp32-full-step.yaml:19", "hardware.gpu.hbm_bytes")


def add_pipeline_entries(corpus, mlp_path):
    """Pipeline and context parallelism (docs/guide/pipeline.md): the shipped 70B pipeline job with one
    workload.parallel key made impossible, each refused at the scenario's line and that key: pp not
    dividing the layers, vpp without pp or not dividing layers / pp, fewer micro-batches than stages for
    1F1B, an unknown schedule or CP algorithm, cp not cutting the sequence into 2 cp chunks, cp on a
    workload without attention, ZeRO-3 with stages, more GPUs than the profile has."""
    base = load(os.path.join(ROOT, "scenarios", "llama3-70b-tp8xpp4-interleaved-step.yaml"))
    entry = scenario_entry(corpus, base, "pipeline_", ["run", "{file}"])

    def parallel(**kv):
        def mod(d):
            par = d["workload"]["parallel"]
            for k, v in kv.items():
                if v is None:
                    par.pop(k, None)
                else:
                    par[k] = v
        return mod

    one_f_one_b = {"vpp": None, "schedule": "1f1b"}
    entry("pp_not_dividing_layers", "pipeline", "workload.parallel.pp", parallel(pp=3, micro_batches=6, **one_f_one_b))
    entry("vpp_without_pp", "pipeline", "workload.parallel.vpp", parallel(pp=None, schedule=None, micro_batches=None))
    entry("vpp_not_dividing_stage_layers", "pipeline", "workload.parallel.vpp", parallel(vpp=3))
    entry("micro_batches_below_pp", "pipeline", "workload.parallel.micro_batches",
          parallel(micro_batches=2, **one_f_one_b))
    entry("schedule_unknown", "pipeline", "workload.parallel.schedule", parallel(schedule="zb_v"))
    entry("cp_not_dividing_seq", "pipeline", "workload.parallel.cp", parallel(cp=3))
    entry("cp_algorithm_unknown", "pipeline", "workload.parallel.cp_algorithm", parallel(cp=2, cp_algorithm="ulysses"))
    entry("cp_algorithm_without_cp", "pipeline", "workload.parallel.cp_algorithm", parallel(cp_algorithm="ring"))
    entry("zero3_with_pp", "pipeline", "workload.parallel.fsdp", parallel(fsdp="zero3"))
    entry("too_many_gpus", "pipeline", "workload.parallel.pp",
          parallel(pp=16, cp=8, micro_batches=16, **one_f_one_b))
    entry("cp_without_attention", "pipeline", "workload.parallel.cp",
          lambda d: d.update({"schemes": ["no_overlap"],
                              "workload": {"kind": "mlp_tpsp", "tp": 8, "model": "llama3-70b", "tokens": 8192,
                                           "pass": "step", "parallel": {"cp": 2}}}))


def add_moe_all_to_all_entries(corpus, mlp_path):
    """workload.all_to_all and workload.max_nodes (docs/guide/moe.md "Dispatch across nodes"): an unknown
    algorithm, a node limit without DeepEP or beyond the group's nodes, and layouts the algorithm cannot
    run, each refused naming the file or flag and the key."""
    deepseek = "{src}/scenarios/deepseek-v3-ep64-moe.yaml"
    sets = [
        ("unknown", ["workload.all_to_all=deep_ep"], "workload.all_to_all"),
        ("max_nodes_without_deepep", ["workload.max_nodes=4"], "workload.max_nodes"),
        ("max_nodes_beyond_nodes", ["workload.all_to_all=deepep", "workload.max_nodes=9"], "workload.max_nodes"),
        ("max_nodes_zero", ["workload.all_to_all=deepep", "workload.max_nodes=0"], "workload.max_nodes"),
        ("max_nodes_low_latency", ["workload.all_to_all=deepep_low_latency", "workload.max_nodes=2"],
         "workload.max_nodes"),
    ]
    for name, values, key in sets:
        argv = ["run", deepseek]
        for v in values:
            argv += ["--set", v]
        corpus.add_cli(f"moe_all_to_all_{name}", argv, "moe_all_to_all", "--set", key)
    layer = ("hardware: {hw}\nworkload:\n  kind: moe\n  experts: {experts}\n  top_k: 8\n  d_model: 1024\n"
             "  d_ffn_expert: 512\n  tokens: 256\n  ep: {ep}\n")
    files = [
        ("hierarchical_one_node", layer.format(hw="h100-sxm-8x-nvswitch", experts=64, ep=8) +
         "  all_to_all: hierarchical\n"),
        ("deepep_partial_node", layer.format(hw="h100-2node-ib400", experts=96, ep=12) + "  all_to_all: deepep\n"),
        ("deepep_expert_tp", layer.format(hw="h100-2node-ib400", experts=64, ep=8) +
         "  expert_tp: 2\n  all_to_all: deepep\n"),
        ("tile_fused_deepep", layer.format(hw="h100-2node-ib400", experts=64, ep=16) +
         "  all_to_all: deepep\nschemes: [moe_tile_fused]\n"),
    ]
    for name, text in files:
        corpus.add_cli(f"moe_all_to_all_{name}", ["run", "{tmp}/m.yaml"], "moe_all_to_all", "m.yaml",
                       "workload.all_to_all", setup=[["write", "m.yaml", text]])


def add_plan_entries(corpus, mlp_path):
    """`overlap-sim plan` (docs/guide/plan.md "Bad input"): an unknown model, a GPU count the search cannot
    factor or the profile does not have, a token batch of no whole sequences, a global batch nothing
    divides, an axis value that is no number, a base that is not a transformer, and a search where
    nothing fits; each refused naming the flag (or the base's file and key), exit 2."""
    tiny = ("hardware: h100-sxm-8x-nvswitch\nworkload:\n  {kind: transformer, tp: 1, model: llama3-8b, layers: 4, "
            "batch: 1, seq: 1024, dtype: bf16, pass: step}\nschemes: [no_overlap]\n")
    setup = [["write", "p.yaml", tiny]]
    base = ["plan", "{tmp}/p.yaml"]
    entries = [
        ("unknown_model", ["plan", "--model", "llama9-1t", "--hardware", "h100-sxm-8x-nvswitch", "--gpus", "8",
                           "--global-batch", "8", "--seq", "1024"], "--model llama9-1t", None, None),
        ("gpus_not_factored", base + ["--gpus", "6", "--global-batch", "6", "--tp", "4", "--cp", "1"], "--gpus 6",
         None, setup),
        ("gpus_beyond_profile", base + ["--gpus", "16", "--global-batch", "16"], "--gpus 16", None, setup),
        ("tokens_not_whole_sequences", base + ["--gpus", "4", "--global-batch-tokens", "5000"],
         "--global-batch-tokens 5000", None, setup),
        ("batch_not_divisible", base + ["--gpus", "4", "--global-batch", "3", "--tp", "1", "--cp", "1", "--pp", "1"],
         "--global-batch 3", None, setup),
        ("axis_not_a_number", base + ["--gpus", "4", "--global-batch", "4", "--tp", "2,x"], "--tp 2,x", None, setup),
        ("nothing_fits", base + ["--gpus", "4", "--global-batch", "4", "--tp", "1,2", "--cp", "1", "--recompute", "none",
                                 "--set", "hardware.gpu.hbm_bytes=1073741824"], "gpu.hbm_bytes", None, setup),
        ("base_not_a_transformer", ["plan", mlp_path, "--gpus", "8", "--global-batch", "8"], "llama3-70b-tp8-mlp.yaml",
         "workload.kind", None),
    ]
    for name, argv, where, key, files in entries:
        corpus.add_cli(f"plan_{name}", argv, "plan", where, key, setup=files)
def add_trace_replay_entries(corpus, mlp_path):
    """trace --replay (docs/guide/trace.md "Replay"): what-ifs that are not KEY=VALUE, unknown keys,
    factors and bandwidths out of range, a link what-if without --hardware or naming a link class the
    profile lacks, a trace with no kernels and ranks of different jobs; each refused naming the flag
    or file, exit 2, and the -o file left as it was."""
    pair = ["{src}/tests/data/trace/replay_rank0.json", "{src}/tests/data/trace/replay_rank1.json"]
    previous = [["write", "out.txt", "previous"]]
    keep = [{"path": "out.txt", "text": "previous"}]
    flags = [
        ("not_key_value", ["--what-if", "comm.speed"], None),
        ("unknown_key", ["--what-if", "comm.sms=8"], None),
        ("unknown_kind", ["--what-if", "kind.tensor.speed=2"], None),
        ("speed_text", ["--what-if", "kind.gemm.speed=fast"], "kind.gemm.speed"),
        ("speed_zero", ["--what-if", "comm.speed=0"], "comm.speed"),
        ("speed_nan", ["--what-if", "comm.speed=nan"], "comm.speed"),
        ("speed_past_1000", ["--what-if", "kind.gemm.speed=1e9"], "kind.gemm.speed"),
        ("link_without_hardware", ["--what-if", "link.nvlink.gbps=900"], None),
        ("link_unknown_class", ["--hardware", "h100-sxm-8x-nvswitch", "--what-if", "link.nic.gbps=100"], None),
        ("link_gbps_zero", ["--hardware", "h100-sxm-8x-nvswitch", "--what-if", "link.nvlink.gbps=0"], "link.nvlink.gbps"),
        ("link_gbps_inf", ["--hardware", "h100-sxm-8x-nvswitch", "--what-if", "link.nvlink.gbps=inf"],
         "link.nvlink.gbps"),
    ]
    for name, extra, key in flags:
        corpus.add_cli(f"trace_replay_{name}", ["trace"] + pair + ["--replay", "-o", "{tmp}/out.txt"] + extra,
                       "trace_replay", "--what-if", key, setup=previous, keep=keep)
    corpus.add_cli("trace_replay_with_kernels", ["trace"] + pair + ["--replay", "--kernels", "-o", "{tmp}/out.txt"],
                   "trace_replay", "--kernels", None, setup=previous, keep=keep)
    no_kernels = ('{"traceEvents": [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, '
                  '"tid": 1, "ts": 10, "dur": 1, "args": {"correlation": 1}}]}')
    corpus.add_cli("trace_replay_no_kernels", ["trace", "{tmp}/t.json", "--replay", "-o", "{tmp}/out.txt"],
                   "trace_replay", "t.json", None, setup=previous + [["write", "t.json", no_kernels]], keep=keep)
    other_job = ('{"distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 4}, "traceEvents": [{"ph": "X", '
                 '"cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", "pid": 0, "tid": 7, "ts": 5, '
                 '"dur": 10, "args": {"device": 0, "stream": 7}}]}')
    corpus.add_cli("trace_replay_mismatched_ranks", ["trace", pair[0], "{tmp}/t.json", "--replay", "-o", "{tmp}/out.txt"],
                   "trace_replay", "t.json", None, setup=previous + [["write", "t.json", other_job]], keep=keep)
def add_sustained_clock_entries(corpus, mlp_path):
    """gpu.peak_clock_mhz and gpu.sustained_clock_mhz (docs/guide/training.md "Sustained clocks"): a
    sustained clock without the peak clock it scales against, one above the GPU's maximum clock_mhz,
    a clock below 1 MHz, a negative one and a NaN, each refused naming the profile file and the key."""
    profile = ("gpu:\n  sm_count: 132\n  clock_mhz: 1980\n  peak_tflops: {{bf16: 989}}\n{clocks}"
               "fabric: {{num_gpus: 8, links: {{nvlink: {{bandwidth_gbps: 450, latency_us: 1}}}}}}\n")
    cases = [
        ("without_peak", "  sustained_clock_mhz: 1700\n", "gpu.sustained_clock_mhz"),
        ("above_max", "  peak_clock_mhz: 1830\n  sustained_clock_mhz: 2500\n", "gpu.sustained_clock_mhz"),
        ("peak_below_1mhz", "  peak_clock_mhz: 0.5\n", "gpu.peak_clock_mhz"),
        ("negative", "  peak_clock_mhz: 1830\n  sustained_clock_mhz: -5\n", "gpu.sustained_clock_mhz"),
        ("nan", "  peak_clock_mhz: 1830\n  sustained_clock_mhz: .nan\n", "gpu.sustained_clock_mhz"),
    ]
    for name, clocks, key in cases:
        corpus.add_cli(f"sustained_clock_{name}", ["profile", "show", "{tmp}/p.yaml"], "sustained_clock", "p.yaml", key,
                       setup=[["write", "p.yaml", profile.format(clocks=clocks)]])
def add_switch_tier_entries(corpus, mlp_path):
    """fabric.nodes_per_leaf and fabric.switch_latency_us (docs/guide/collective.md "Across nodes"):
    values they do not take, and either key on a one-node profile, each refused naming the profile or
    flag and the key. A profile file with a bad value names its line."""
    base = ["run", mlp_path, "--scheme", "no_overlap", "--hardware", "h100-2node-ib400", "--set"]
    for value in ["-1", "1.5", "abc", "70000"]:
        corpus.add_cli(f"nodes_per_leaf_{value}", base + [f"hardware.fabric.nodes_per_leaf={value}"], "out_of_range",
                       "h100-2node-ib400", "hardware.fabric.nodes_per_leaf")
    for value in ["-0.1", "nan", "abc"]:
        corpus.add_cli(f"switch_latency_us_{value}", base + [f"hardware.fabric.switch_latency_us={value}"],
                       "out_of_range", "h100-2node-ib400", "hardware.fabric.switch_latency_us")
    for key in ["nodes_per_leaf=2", "switch_latency_us=0.3"]:
        corpus.add_cli(f"switch_tier_one_node_{key.split('=')[0]}", ["run", mlp_path, "--scheme", "no_overlap", "--set",
                                                                     f"hardware.fabric.{key}"], "topology", "--set",
                       "hardware.fabric." + key.split("=")[0])
    with open(os.path.join(ROOT, "scenarios", "hardware", "h100-64node-ib400-rail.yaml")) as f:
        text = f.read()
    bad = text.replace("nodes_per_leaf: 32", "nodes_per_leaf: -32")
    line = next(i + 1 for i, l in enumerate(bad.splitlines()) if "nodes_per_leaf: -32" in l)
    corpus.add_cli("nodes_per_leaf_in_profile_file", ["run", mlp_path, "--scheme", "no_overlap", "--hardware",
                                                      "{tmp}/hw.yaml"], "out_of_range", f"hw.yaml:{line}",
                   "fabric.nodes_per_leaf", setup=[["write", "hw.yaml", bad]])


def add_stage_layers_dualpipe_entries(corpus, mlp_path):
    """Uneven stages and DualPipe (docs/guide/pipeline.md): the shipped 70B DualPipe job with one
    workload.parallel key made impossible, each refused at the scenario's line and that key: the first or
    last stage's layers leaving the rest uneven over the other stages, not divisible by vpp, or given
    without stages; DualPipe on an odd pp, with fewer than 2 pp or an odd number of micro-batches, or with
    model chunks (vpp)."""
    base = load(os.path.join(ROOT, "scenarios", "llama3-70b-tp8xpp4-dualpipe-step.yaml"))
    entry = scenario_entry(corpus, base, "stage_layers_", ["run", "{file}"])

    def parallel(**kv):
        def mod(d):
            par = d["workload"]["parallel"]
            for k, v in kv.items():
                if v is None:
                    par.pop(k, None)
                else:
                    par[k] = v
        return mod

    one_f_one_b = {"schedule": "1f1b"}
    entry("rest_uneven", "pipeline", "workload.parallel.first_stage_layers",
          parallel(first_stage_layers=19, last_stage_layers=20, **one_f_one_b))
    entry("last_rest_uneven", "pipeline", "workload.parallel.last_stage_layers",
          parallel(last_stage_layers=21, **one_f_one_b))
    entry("first_not_dividing_vpp", "pipeline", "workload.parallel.first_stage_layers",
          parallel(vpp=2, schedule="interleaved", first_stage_layers=19, last_stage_layers=19))
    entry("first_too_many", "pipeline", "workload.parallel.first_stage_layers",
          parallel(first_stage_layers=79, **one_f_one_b))
    entry("first_zero", "pipeline", "workload.parallel.first_stage_layers", parallel(first_stage_layers=0))
    entry("without_pp", "pipeline", "workload.parallel.last_stage_layers",
          parallel(pp=None, schedule=None, micro_batches=None, last_stage_layers=40))
    entry("dualpipe_pp_odd", "pipeline", "workload.parallel.pp", parallel(pp=5, micro_batches=10))
    entry("dualpipe_micro_batches_below_2pp", "pipeline", "workload.parallel.micro_batches",
          parallel(micro_batches=6))
    entry("dualpipe_micro_batches_odd", "pipeline", "workload.parallel.micro_batches", parallel(micro_batches=9))
    entry("dualpipe_with_vpp", "pipeline", "workload.parallel.vpp", parallel(vpp=2))


def add_attention_entries(corpus, mlp_path):
    """workload.attention (docs/guide/training.md "Core attention"): a value it does not take, and unfused
    attention where it does not apply: a forward pass, a mixture-of-experts transformer or layer, a single
    attention layer workload, context parallelism (whose attention runs as flash attention blocks). Each refused naming
    the file, the key's line and the key."""
    step = ("hardware: h100-sxm-8x-nvswitch\nworkload:\n  kind: transformer\n  tp: 8\n  model: llama3-70b\n"
            "  layers: 2\n  batch: 1\n  seq: 1024\n  pass: step\n")
    cp = ("hardware: h100-64node-ib400-rail\nworkload:\n  kind: transformer\n  tp: 8\n  model: llama3-70b\n"
          "  layers: 2\n  batch: 1\n  seq: 4096\n  pass: step\n  parallel: {cp: 2}\n")
    cases = [
        ("attention_unknown", step + "  attention: sdpa\nschemes: [no_overlap]\n"),
        ("attention_unfused_on_forward", step.replace("pass: step", "pass: forward") +
         "  attention: unfused\nschemes: [no_overlap]\n"),
        ("attention_unfused_on_moe", step.replace("llama3-70b", "mixtral-8x7b").replace("tp: 8", "tp: 4") +
         "  attention: unfused\nschemes: [no_overlap]\n"),
        ("attention_unfused_on_attention_layer",
         "hardware: h100-sxm-8x-nvswitch\nworkload:\n  kind: attention_tpsp\n  tp: 8\n  batch: 1\n  seq: 1024\n"
         "  d_model: 8192\n  heads: 64\n  pass: step\n  attention: unfused\nschemes: [no_overlap]\n"),
        ("attention_unfused_with_cp", cp + "  attention: unfused\nschemes: [no_overlap]\n"),
    ]
    for name, text in cases:
        line = next(i + 1 for i, l in enumerate(text.splitlines()) if l.startswith("  attention:"))
        corpus.add_cli(name, ["run", "{tmp}/s.yaml"], "step_kernels", f"s.yaml:{line}", "workload.attention",
                       setup=[["write", "s.yaml", text]])
    # A MoE layer (kind moe) runs no core attention at all.
    corpus.add_cli("attention_unfused_on_moe_layer", ["run", "{src}/scenarios/mixtral-8x7b-ep4-etp2-moe.yaml", "--set",
                                                      "workload.attention=unfused"], "step_kernels", "--set",
                   "workload.attention")



def add_workload_key_range_entries(corpus, mlp_path):
    """Every workload key with a range (sim/workload_key_table.hpp, read from the JSON dump overlap-docgen
    writes of it, tests/data/bad_inputs/workload_keys.json) given a value above its range and one below,
    in a workload of a kind that takes it (a transformer step for the step kernels' and
    workload.parallel's keys, a MoE transformer for its MoE keys); each refused at the workload's line
    and that key."""
    with open(os.path.join(ROOT, "tests", "data", "bad_inputs", "workload_keys.json")) as f:
        table = json.load(f)
    step_kernel = set(table["allowed_by_kind"]["gemm_collective"][-5:])  # every kind lists them last
    transformer = table["allowed_by_kind"]["transformer"]
    transformer_moe = set(transformer[transformer.index("dtype") + 1:-5])  # its own keys after dtype
    moe_transformer = "{kind: transformer, tp: 8, model: mixtral-8x7b, batch: 1, seq: 8192}"

    def base(key):
        """The workload (a dict) the key is probed in, and where the key sits in it."""
        name = key["name"]
        if name.startswith("parallel.") or name in step_kernel:
            w = yaml.safe_load(table["examples"]["transformer"])
            w["pass"] = "step"
            if name.startswith("parallel."):
                w["parallel"] = {}
                return w, w["parallel"], name.split(".", 1)[1]
            return w, w, name
        kind = next(k for k in key["kinds"] if name in table["allowed_by_kind"][k])
        text = table["examples"][kind]
        if kind == "transformer" and name in transformer_moe:
            text = moe_transformer  # a dense model refuses every MoE key but experts as not applying
        w = yaml.safe_load(text)
        if name in ("batch", "seq") and "tokens" in w:  # tokens, or batch and seq
            del w["tokens"]
            w["seq" if name == "batch" else "batch"] = 8192 if name == "batch" else 1
        return w, w, name

    def flow(v):
        return yaml.safe_dump(v, default_flow_style=True, width=10000).strip()

    for key in table["keys"]:
        r = key.get("range")
        if r is None:
            continue
        if r["integer"]:
            above, below = int(r["max"]) * 2, int(r["min"]) - 1
        else:
            above, below = r["max"] * 2, (r["min"] / 2 if r["min"] > 0 else -1)
        for side, value in (("above", above), ("below", below)):
            if key["name"] == "kv_heads" and value == 0:
                continue  # kv_heads: 0 means as many as heads
            w, where, leaf = base(key)
            where[leaf] = value
            text = "hardware: h100-sxm-8x-nvswitch\nworkload: " + flow(w) + "\nschemes: [no_overlap]\n"
            ident = "workload_key_{}_{}_range".format(key["name"].replace(".", "_"), side)
            corpus.add_cli(ident, ["run", "{tmp}/s.yaml"], "out_of_range", "s.yaml:2", "workload." + key["name"],
                           setup=[["write", "s.yaml", text]])
def add_rocm_trace_entries(corpus, mlp_path):
    """ROCm traces (docs/guide/trace.md "Recording a profile", ROCm): a ROCm trace with its HIP runtime
    calls but no kernels (recorded without ProfilerActivity.CUDA), and one cut off mid-event; each
    refused naming the file, exit 2, and the -o file left as it was."""
    previous = [["write", "out.txt", "previous"]]
    keep = [{"path": "out.txt", "text": "previous"}]
    corpus.add_cli("trace_rocm_no_kernels", ["trace", "{src}/tests/data/trace/rocm_no_kernels.json", "-o", "{tmp}/out.txt"],
                   "trace_rocm", "rocm_no_kernels.json", None, setup=previous, keep=keep)
    cut = ('{"traceEvents": [{"ph": "X", "cat": "cuda_runtime", "name": "hipExtModuleLaunchKernel", "pid": 1, '
           '"tid": 1, "ts": 10, "dur": 1, "args": {"correlation": 1, "kernel": "Custom_Cijk_Alik_Bljk_BBS_BH')
    corpus.add_cli("trace_rocm_truncated", ["trace", "{tmp}/t.json", "--hardware", "mi300x-8x", "-o", "{tmp}/out.txt"],
                   "trace_rocm", "t.json", None, setup=previous + [["write", "t.json", cut]], keep=keep)


def add_trace_what_if_scheme_entries(corpus, mlp_path):
    """trace --replay what-ifs comm.sms and swap.all_gather (docs/guide/trace.md "What-ifs"): without
    --hardware, comm.sms past the profile's SMs or not a whole number, a swap to a name that is no
    scheme or to a scheme that does not gather before a GEMM; each refused naming --what-if, exit 2,
    and the -o file left as it was."""
    previous = [["write", "out.txt", "previous"]]
    keep = [{"path": "out.txt", "text": "previous"}]
    sms = "{src}/tests/data/trace/sm_share.json"
    swap = "{src}/tests/data/trace/swap.json"
    hw = ["--hardware", "h100-sxm-8x-nvswitch"]
    cases = [
        ("sms_without_hardware", sms, ["--what-if", "comm.sms=4"], None),
        ("sms_past_sm_count", sms, hw + ["--what-if", "comm.sms=132"], None),
        ("sms_fraction", sms, hw + ["--what-if", "comm.sms=2.5"], "comm.sms"),
        ("swap_without_hardware", swap, ["--what-if", "swap.all_gather=async_tp"], None),
        ("swap_unknown_scheme", swap, hw + ["--what-if", "swap.all_gather=no_such_scheme"], None),
        ("swap_scheme_not_gathering", swap, hw + ["--what-if", "swap.all_gather=dtp"], None),
    ]
    for name, trace, extra, key in cases:
        corpus.add_cli(f"trace_what_if_{name}", ["trace", trace, "--replay", "-o", "{tmp}/out.txt"] + extra,
                       "trace_replay", "--what-if", key, setup=previous, keep=keep)


APPENDED = [add_output_input_entries, add_out_of_memory_entries, add_bounded_message_entries,
            add_network_memory_trace_entries, add_placeholder_entries, add_input_hardening_entries,
            add_trace_hardening_entries, add_step_kernel_entries, add_pipeline_entries,
            add_moe_all_to_all_entries, add_plan_entries, add_trace_replay_entries,
            add_sustained_clock_entries, add_switch_tier_entries, add_stage_layers_dualpipe_entries,
            add_attention_entries, add_workload_key_range_entries, add_rocm_trace_entries,
            add_trace_what_if_scheme_entries]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "bad_inputs"))
    ap.add_argument("--append", action="store_true",
                    help="keep every committed entry (ids and files) and add only the entries of the "
                         "generators in APPENDED that are not there yet, numbered after them")
    args = ap.parse_args()
    out = args.out
    mlp_path = "{src}/scenarios/llama3-70b-tp8-mlp.yaml"
    if args.append:
        with open(os.path.join(out, "manifest.json")) as f:
            corpus = Corpus(out, json.load(f)["entries"])
        committed = len(corpus.entries)
        for add in APPENDED:
            add(corpus, mlp_path)
        write_manifest(corpus, out)
        print(f"{len(corpus.entries) - committed} entries appended to the {committed} committed ones in {out}")
        return 0
    for sub in ("scenarios", "profiles"):
        shutil.rmtree(os.path.join(out, sub), ignore_errors=True)
    os.makedirs(out, exist_ok=True)
    rng = random.Random(SEED)
    corpus = Corpus(out)

    # Scenarios that name a built-in profile (a relative profile path would not resolve from the corpus).
    scen_paths = sorted([os.path.join(ROOT, "scenarios", f) for f in os.listdir(os.path.join(ROOT, "scenarios"))
                         if f.endswith(".yaml")] +
                        [os.path.join(ROOT, "scenarios", "papers", f)
                         for f in os.listdir(os.path.join(ROOT, "scenarios", "papers")) if f.endswith(".yaml")])
    scenarios = [(p, load(p)) for p in scen_paths]
    scenarios = [(p, d) for p, d in scenarios if isinstance(d.get("hardware"), str) and "/" not in d["hardware"]]
    # Training-step scenarios are mutated last, with a generator of their own (add_training_entries), so
    # that adding them left every earlier entry and its id as they were.
    moe_step = [(p, d) for p, d in scenarios if is_training(d) and is_moe(d)]
    moe_transformer_step = [(p, d) for p, d in scenarios if is_training(d) and is_moe_transformer(d)]
    training = [(p, d) for p, d in scenarios if is_training(d) and not is_moe(d) and not is_moe_transformer(d)]
    expert_tp = [(p, d) for p, d in scenarios if is_expert_tp(d)]
    scenarios = [(p, d) for p, d in scenarios if not is_training(d) and not is_expert_tp(d)]
    profile_paths = sorted(os.path.join(ROOT, "scenarios", "hardware", f)
                           for f in os.listdir(os.path.join(ROOT, "scenarios", "hardware")) if f.endswith(".yaml"))
    profiles = [(p, load(p)) for p in profile_paths]

    run_file = ["run", "{file}"]
    show_file = ["profile", "show", "{file}"]
    add_mutations(corpus, rng, out, scenarios, profiles, run_file, show_file)
    add_degenerate_entries(corpus, run_file, show_file)
    mlp = load(os.path.join(ROOT, "scenarios", "llama3-70b-tp8-mlp.yaml"))
    add_huge_lists(corpus, mlp, run_file)
    h100_text = add_examples(corpus, mlp, run_file, show_file)
    # {src}: the source tree; {tmp}: a scratch directory (outputs land there).
    add_cli_entries(corpus, mlp_path)
    add_robustness_entries(corpus, mlp, h100_text, run_file, show_file, mlp_path)
    add_training_entries(corpus, training, run_file)
    add_expert_tp_entries(corpus, expert_tp, run_file)
    add_moe_step_entries(corpus, moe_step, run_file)
    add_moe_transformer_step_entries(corpus, moe_transformer_step, run_file)
    # Added last, so every earlier entry keeps its id.
    for add in APPENDED:
        add(corpus, mlp_path)
    write_manifest(corpus, out)


def write_manifest(corpus, out):
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"generator": "tools/make_bad_inputs.py", "seed": SEED, "entries": corpus.entries}, f, indent=1)
        f.write("\n")
    with open(os.path.join(out, "cli.txt"), "w") as f:
        f.write("# Bad command lines (tools/make_bad_inputs.py; expectations in manifest.json)\n")
        for e in corpus.entries:
            if "file" not in e:
                f.write("overlap-sim " + " ".join(a if a and " " not in a else repr(a) for a in e["argv"]) + "\n")
    files = sum(1 for e in corpus.entries if "file" in e)
    print(f"{len(corpus.entries)} entries ({files} files, {len(corpus.entries) - files} command lines) in {out}")


if __name__ == "__main__":
    sys.exit(main())
