#!/usr/bin/env python3
"""deps_graph.py -- the include graph of the tree, and the rules it must keep.

Prints, per folder, which files each C file includes (project headers only;
system headers are left out), then checks:

  G1  no include circle: the graph of modules has no cycle.  x.c, x.h and
      x_int.h are one module, SQLite-style, so "x.c includes y.h, y.c
      includes x.h" is a circle.  A contract header is a node of its own
      instead: every layer may include it without joining the module of
      the .c file that shares its name.  The contracts are the headers
      listed in tools/deps_contracts.txt, each with the reason it is one;
      a header not listed there is not a contract, and a listed path that
      is not a header of the tree is a breach;
  G2  outside engine/, the only engine headers included are the public
      engine.h, the byte layouts of format.h and the inspection door
      inspect.h.  tests/ is exempt: its suites are white-box tests of the
      engine's layers (a suite for page.c includes page.h), the way
      SQLite's test*.c files include sqliteInt.h.  So is each pair of
      G2_ALLOWED, a benchmark that times one internal function itself
      rather than a copy that would drift from it;
  G3  no source file (.c, .h, .py) is longer than MAX_LINES;
  G4  engine/ includes nothing outside engine/: not common/ (the
      conventions of the programs around the engine: the seeded RNG, the
      key format), not faults/, oracle/ or stress/ (the engine is what
      they test; it offers them hook points it declares itself).

Exit 0 when every rule holds, 1 when one is broken (each breach printed),
2 on a usage error (no contracts file).  Standard library only: `make
deps-graph` runs it.
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ["engine", "common", "faults", "oracle", "stress", "bench", "tools", "tests", "crashtest"]
ENGINE_DOORS = {"engine/engine.h", "engine/format.h", "engine/inspect.h"}
G2_EXEMPT = ("tests/",)
# (file, engine header) pairs G2 lets through, each with its reason.
G2_ALLOWED = {
    (
        "bench/bench_hashes.c",
        "engine/kvprot.h",
    ): "times kv_leaf_entry_code, the entry code the pool runs",
}
MAX_LINES = 1200
# The compiler's search path, as the Makefile gives it (-I. -Iengine, and
# -Ifaults / -Itests for the fault library and the suites).
SEARCH = ["", "engine", "faults", "tests", "oracle", "stress"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
CONTRACTS_FILE = os.path.join("tools", "deps_contracts.txt")


def sources(root):
    out = []
    for top in FOLDERS:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(x for x in dirs if x not in ("__pycache__",))
            for f in sorted(files):
                if f.endswith((".c", ".h", ".py")):
                    out.append(os.path.relpath(os.path.join(d, f), root))
    if os.path.exists(os.path.join(root, "crashtest.py")):
        out.append("crashtest.py")
    return out


def resolve(root, src, name):
    """The repository file SRC's #include "NAME" names (its own folder
    first, then the search path), or None (a generated or system file)."""
    for base in [os.path.dirname(src)] + SEARCH:
        p = os.path.normpath(os.path.join(base, name))
        if os.path.exists(os.path.join(root, p)):
            return p
    return None


def read_contracts(path):
    """The contract headers PATH lists: {header: why}.  One per line,
    "HEADER  why it is a contract"; blank lines and lines starting with #
    are skipped.  A line without its reason is refused (ValueError): a
    contract nobody can explain is a module header."""
    out = {}
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 1)
            if len(parts) < 2:
                raise ValueError("%s:%d: %s has no reason" % (path, n, parts[0]))
            out[os.path.normpath(parts[0])] = parts[1]
    return out


def module(path, contract):
    """The module a file belongs to: x.c, x.h and the internal header
    x_int.h are one module (their mutual includes are no circle).  A
    contract is a node of its own: every layer may include it without
    joining its module.  (A header with no .c of its name is a node of its
    own anyway; listing it as a contract keeps it one if such a file
    appears.)"""
    if path in contract:
        return path
    base = os.path.splitext(path)[0]
    return base[:-4] if base.endswith("_int") else base


def cycles(edges):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def circle_path(comp, medges, graph, contract):
    """One shortest circle through COMP's first module, told by the
    includes that make it: "a.c includes b.h, b.h includes a.h"."""
    inside, start = set(comp), comp[0]
    prev, todo = {}, [start]
    while todo and start not in prev:
        nxt = []
        for v in todo:
            for w in sorted(medges.get(v, ())):
                if w in inside and w not in prev:
                    prev[w] = v
                    nxt.append(w)
        todo = nxt
    path, v = [start], start
    while True:
        v = prev[v]
        path.append(v)
        if v == start:
            break
    path.reverse()
    how = []
    for m1, m2 in zip(path, path[1:]):
        f, p = next(
            (f, p)
            for f in sorted(graph)
            for p in graph[f]
            if module(f, contract) == m1 and module(p, contract) == m2
        )
        how.append("%s includes %s" % (f, p))
    return ", ".join(how)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=ROOT, help="repository root (default: %(default)s)")
    ap.add_argument(
        "--contracts", help="the contract headers' list (default: ROOT/%s)" % CONTRACTS_FILE
    )
    ap.add_argument("--quiet", action="store_true", help="print only breaches")
    a = ap.parse_args(argv)
    root = a.root
    cpath = a.contracts or os.path.join(root, CONTRACTS_FILE)
    try:
        contract = read_contracts(cpath)
    except (OSError, ValueError) as e:
        print("deps-graph: contracts: %s" % e, file=sys.stderr)
        return 2
    files = sources(root)
    graph, breaches = {}, []
    for c in sorted(contract):
        if not c.endswith(".h") or not os.path.isfile(os.path.join(root, c)):
            breaches.append(
                "G1 %s lists %s, which is no header of the tree"
                % (a.contracts or CONTRACTS_FILE, c)
            )
    for f in files:
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        n = text.count("\n")
        if n > MAX_LINES:
            breaches.append("G3 %s: %d lines (at most %d)" % (f, n, MAX_LINES))
        if not f.endswith((".c", ".h")):
            continue
        incs = []
        for name in INCLUDE.findall(text):
            p = resolve(root, f, name)
            if p:
                incs.append(p)
        graph[f] = incs
        if not f.startswith("engine/") and not f.startswith(G2_EXEMPT):
            for p in incs:
                if p.startswith("engine/") and p not in ENGINE_DOORS and (f, p) not in G2_ALLOWED:
                    breaches.append(
                        "G2 %s includes %s (outside engine/ only %s)"
                        % (f, p, ", ".join(sorted(ENGINE_DOORS)))
                    )
        if f.startswith("engine/"):
            for p in incs:
                if not p.startswith("engine/"):
                    breaches.append(
                        "G4 %s includes %s (the engine includes nothing outside engine/)" % (f, p)
                    )
    medges = {}
    for f, incs in graph.items():
        for p in incs:
            if module(p, contract) != module(f, contract):
                medges.setdefault(module(f, contract), set()).add(module(p, contract))
    for comp in cycles(medges):
        breaches.append(
            "G1 include circle: %s (%s)"
            % (" <-> ".join(comp), circle_path(comp, medges, graph, contract))
        )
    if not a.quiet:
        folder = None
        for f in sorted(graph):
            top = f.split("/")[0]
            if top != folder:
                folder = top
                print("%s/" % top)
            print("  %-40s -> %s" % (f[len(top) + 1 :], ", ".join(graph[f]) or "-"))
    for b in breaches:
        print("deps-graph: " + b, file=sys.stderr)
    if breaches:
        print("deps-graph: %d breach(es)" % len(breaches), file=sys.stderr)
        return 1
    if not a.quiet:
        print(
            "deps-graph: no circle (contracts: %s); engine internals stay in engine/ (tests "
            "exempt); no file over %d lines; the engine includes nothing outside engine/"
            % (", ".join(sorted(contract)), MAX_LINES)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
