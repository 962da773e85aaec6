#!/usr/bin/env python3
"""Keeps the rule labels (K1, PL8, V4b ...) one namespace: docs/rules.md.

docs/rules.md lists every label in a table row whose first cell is the
label in backticks and whose second is the file that defines it:

    | `KV1` | `engine/kvprot.h` | a binary search is proven by ... |

Its labels' letter prefixes are the families (KV, PL, V ...).  The tool
then reads the tree -- engine/ faults/ oracle/ stress/ crashtest/ tools/
common/ tests/ docs/ bench/ and the top folder's own files; *.c, *.h,
*.py, *.md, *.sh, *.txt -- and fails when

  - a file cites a label of a listed family that docs/rules.md does not
    list (an old name, a typo, a rule nobody listed), or
  - docs/rules.md lists one label twice, or gives one family two files, or
    names a file that does not exist or never mentions the label (a
    lettered label, W3a, may be written as its number's case, W3 (a)).

What counts as a citation: in C, the comments (an identifier or a usage
string is not one); in Python, the comments and the strings (docstrings);
in Markdown, shell and text files (the planted-bug catalogues), every
line.  A label is one to three capitals, one or two digits and at most
one lower-case letter, standing alone (K1, V4b, KV1u, IO3), and only a
listed family's prefix makes a word one: E402, XXH3 and SSE2 are none.
NOT_LABELS names the few words of the tree that look like a label of a
family and are none; an entry that no longer matches fails too, so the
list cannot outlive its reason.  This file and
its test (tests/test_rule_labels.py) are not read: they name words that
are no labels, on purpose.

Usage: tools/rule_labels.py [--root DIR] [--quiet].  One line per
problem, path:LINE: what.  Exit 0 when every citation is listed, 1 when
one is not (or the list is wrong), 2 on a usage error (no docs/rules.md,
or no label in it).  Standard library only; run by tests/run_all.sh."""

import argparse
import io
import os
import re
import sys
import tokenize

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RULES = os.path.join("docs", "rules.md")
SELF = (os.path.join("tools", "rule_labels.py"), os.path.join("tests", "test_rule_labels.py"))
FOLDERS = ("engine", "faults", "oracle", "stress", "crashtest", "tools", "common")
FOLDERS += ("tests", "docs", "bench")
EXTENSIONS = (".c", ".h", ".py", ".md", ".sh", ".txt")
LABEL = re.compile(r"(?<![A-Za-z0-9_])([A-Z]{1,3})([0-9]{1,2})([a-z]?)(?![A-Za-z0-9_])")
ROW = re.compile(r"^\|\s*`([A-Z]{1,3}[0-9]{1,2}[a-z]?)`\s*\|\s*`([^`]+)`\s*\|")
# (file, word): why the word is no citation of a rule.
NOT_LABELS = {
    ("crashtest/procs.py", "T0"): "the parameter t0, upper-cased in docstrings",
}


class UsageError(Exception):
    pass


def read_rules(root):
    """docs/rules.md's rows: ({label: file}, {prefix: file}, [problem])."""
    path = os.path.join(root, RULES)
    if not os.path.isfile(path):
        raise UsageError("%s: not found" % RULES)
    labels, families, seen, problems = {}, {}, {}, []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            m = ROW.match(line)
            if not m:
                continue
            label, where = m.group(1), m.group(2)
            prefix = LABEL.match(label).group(1)
            if label in seen:
                problems.append(
                    "%s:%d: %s listed twice (first at line %d)" % (RULES, n, label, seen[label])
                )
                continue
            seen[label] = n
            labels[label] = where
            first = families.setdefault(prefix, (where, n))
            if first[0] != where:
                problems.append(
                    "%s:%d: %s in %s, but family %s is %s's (line %d)"
                    % (RULES, n, label, where, prefix, first[0], first[1])
                )
            problems += defined_in(root, label, where, n)
    if not labels:
        raise UsageError("%s: no label rows" % RULES)
    return labels, {p: f[0] for p, f in families.items()}, problems


def defined_in(root, label, where, n):
    """A problem when WHERE is no file of ROOT that mentions LABEL: [str]."""
    path = os.path.join(root, where)
    if not os.path.isfile(path):
        return ["%s:%d: %s: %s is no file of the tree" % (RULES, n, label, where)]
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    m = LABEL.match(label)
    forms = [label] + ([m.group(1) + m.group(2)] if m.group(3) else [])
    if any(re.search(r"(?<![A-Za-z0-9_])%s(?![A-Za-z0-9_])" % f, text) for f in forms):
        return []
    return ["%s:%d: %s: %s never mentions it" % (RULES, n, label, where)]


def tree_files(root):
    """The files read, relative to ROOT, sorted: [path]."""
    out = [f for f in os.listdir(root) if f.endswith(EXTENSIONS)]
    out = [f for f in out if os.path.isfile(os.path.join(root, f))]
    for top in FOLDERS:
        for d, subdirs, files in os.walk(os.path.join(root, top)):
            subdirs[:] = [s for s in subdirs if not s.startswith(".") and s != "__pycache__"]
            for f in files:
                if f.endswith(EXTENSIONS):
                    out.append(os.path.relpath(os.path.join(d, f), root))
    return sorted(p for p in out if p not in SELF)


def c_comments(text):
    """TEXT with everything but its comments blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(text[i:j])
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(text[i:j])
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i : j + 1]))
            i = j + 1
        else:
            out.append(c if c == "\n" else " ")
            i += 1
    return "".join(out)


def py_words(text):
    """TEXT's comments and strings, each where it stands: [(line, text)]."""
    keep = {tokenize.COMMENT, tokenize.STRING}
    keep |= {getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return list(enumerate(text.split("\n"), 1))
    return [(t.start[0], t.string) for t in toks if t.type in keep]


def cited(path, text):
    """The citable text of PATH: [(first line, text)]."""
    if path.endswith((".c", ".h")):
        return [(1, c_comments(text))]
    if path.endswith(".py"):
        return py_words(text)
    return [(1, text)]


def citations(root, path, families):
    """The labels of FAMILIES that PATH cites: [(line, label)]."""
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    out = []
    for first, chunk in cited(path, text):
        for m in LABEL.finditer(chunk):
            if m.group(1) in families:
                out.append((first + chunk.count("\n", 0, m.start()), m.group(0)))
    return out


def check(root):
    """Every problem of ROOT's labels: [str]."""
    labels, families, problems = read_rules(root)
    used = set()
    for path in tree_files(root):
        for line, label in citations(root, path, families):
            if label in labels:
                continue
            if (path, label) in NOT_LABELS:
                used.add((path, label))
                continue
            family = LABEL.match(label).group(1)
            problems.append(
                "%s:%d: %s is no label listed in %s (family %s is %s's)"
                % (path, line, label, RULES, family, families[family])
            )
    for path, word in sorted(set(NOT_LABELS) - used):
        if os.path.isfile(os.path.join(root, path)):
            problems.append(
                "%s: %s no longer appears: drop it from NOT_LABELS in tools/rule_labels.py"
                % (path, word)
            )
    return problems, len(labels), len(families)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Fail when the tree cites a rule label docs/rules.md does not list."
    )
    ap.add_argument("--root", default=REPO, help="the tree to read (default: this repository)")
    ap.add_argument("--quiet", action="store_true", help="print only the problems")
    a = ap.parse_args(argv)
    try:
        problems, nlabels, nfamilies = check(a.root)
    except UsageError as e:
        print("rule_labels: %s" % e, file=sys.stderr)
        return 2
    for p in problems:
        print(p)
    if not a.quiet or problems:
        print(
            "rule_labels: %d label(s) in %d families, %d problem(s)"
            % (nlabels, nfamilies, len(problems))
        )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
