#!/usr/bin/env python3
"""c_function_length.py -- C functions longer than the house limit.

Lists every function defined in the git-tracked *.c files outside tests/
and bench/ whose definition is longer than LIMIT lines (120 unless
--limit says otherwise), one line each:

    path:LINE: NAME is N lines (limit 120)

A function's length runs from the first line of its definition (the
return type, attributes and storage class included) to its closing brace,
both counted.  Files are read from the working tree, so a split not yet
committed counts.

The scan is lexical, not a parse: comments, string and character
literals and preprocessor lines are blanked first, then every brace at
file level that follows a parameter list (a ')' with no '=' between the
previous declaration and the brace) opens a function.  Struct, union and
enum bodies and initializers are not functions.  Good enough for this
tree's style (clang-format, one definition per declaration); a file whose
braces do not balance is reported as unreadable rather than measured.

Exit 0 when no function is over the limit, 1 when one is (or a file
could not be measured), 2 on a usage error.  Standard library only.
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIMIT = 120
# Top-level folders whose C files are not held to the limit: the suites
# and the benchmarks.
EXEMPT = ("tests/", "bench/")
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Identifiers followed by a parenthesized group that is not a parameter
# list.
NOT_NAMES = {
    "__attribute__",
    "__attribute",
    "__declspec",
    "__asm__",
    "asm",
    "__typeof__",
    "typeof",
    "_Alignas",
}


def tracked_c_files(root):
    """The git-tracked *.c files under ROOT outside EXEMPT, sorted."""
    out = subprocess.run(
        ["git", "-C", root, "ls-files", "-z", "--", "*.c"], check=True, stdout=subprocess.PIPE
    ).stdout.decode()
    files = [p for p in out.split("\0") if p and not p.startswith(EXEMPT)]
    return sorted(files)


def blank_noise(text):
    """TEXT with comments, string and character literals and preprocessor
    lines replaced by spaces, newlines kept, so offsets and line numbers
    stay those of the file and no brace or paren inside them counts."""
    out = list(text)
    i, n = 0, len(text)
    at_line_start = True
    # One entry per open #if: whether the branch being read is a later
    # one (#elif, #else).  Only the first branch of each is kept, so the
    # two spellings of a header a planted bug or a platform switches
    # between count once.
    later = []
    while i < n:
        c = text[i]
        if c == "\n":
            at_line_start = True
            i += 1
            continue
        if at_line_start and c in " \t":
            i += 1
            continue
        if at_line_start and c == "#":
            # A directive runs to an unescaped newline.
            j = i
            while j < n and text[j] != "\n":
                if text[j] == "\\" and j + 1 < n and text[j + 1] == "\n":
                    j += 2
                    continue
                j += 1
            m = re.match(r"#\s*(\w+)", text[i:j])
            word = m.group(1) if m else ""
            if word in ("if", "ifdef", "ifndef"):
                later.append(False)
            elif word in ("elif", "else", "elifdef", "elifndef") and later:
                later[-1] = True
            elif word == "endif" and later:
                later.pop()
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
            continue
        at_line_start = False
        if any(later):
            out[i] = " "
            i += 1
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        else:
            i += 1
    return "".join(out)


def function_name(header):
    """The name a definition's HEADER (its text from the previous
    declaration's end to the opening brace) declares, or None when the
    header is no function's: it must end with a parameter list."""
    h = header.rstrip()
    if not h.endswith(")") or "=" in _outside_parens(h):
        return None
    # Walk back over the trailing paren groups; the name is the identifier
    # right before the first group that belongs to no attribute.
    end = len(h)
    while end > 0:
        if h[end - 1] != ")":
            return None
        depth, j = 0, end - 1
        while j >= 0:
            if h[j] == ")":
                depth += 1
            elif h[j] == "(":
                depth -= 1
                if depth == 0:
                    break
            j -= 1
        if j < 0:
            return None
        before = h[:j].rstrip()
        m = re.search(r"[A-Za-z_][A-Za-z0-9_]*$", before)
        if m is None:
            return None
        if m.group(0) not in NOT_NAMES:
            return m.group(0)
        end = len(before[: m.start()].rstrip())
    return None


def _outside_parens(s):
    """S with everything inside parentheses dropped."""
    out, depth = [], 0
    for c in s:
        if c == "(":
            depth += 1
        elif c == ")":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(c)
    return "".join(out)


def functions(text):
    """[(name, first line, last line)] of every function TEXT defines,
    lines counted from 1.  Raises ValueError when the braces at file level
    do not balance."""
    clean = blank_noise(text)
    found = []
    depth = 0
    decl_start = 0  # offset where the text of the current declaration begins
    open_at = None  # (name, first line) of the function whose body is open
    line = 1
    for i, c in enumerate(clean):
        if c == "\n":
            line += 1
        elif c == "{":
            if depth == 0:
                header = clean[decl_start:i]
                name = function_name(header)
                if name is not None:
                    lead = len(header) - len(header.lstrip())
                    first = line - header[lead:].count("\n") if header.strip() else line
                    open_at = (name, first)
                else:
                    open_at = None
            depth += 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                raise ValueError("line %d: '}' closes nothing" % line)
            if depth == 0:
                if open_at is not None:
                    found.append((open_at[0], open_at[1], line))
                    open_at = None
                decl_start = i + 1
        elif c == ";" and depth == 0:
            decl_start = i + 1
    if depth != 0:
        raise ValueError("%d brace(s) left open at the end of the file" % depth)
    return found


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="List the C functions (git-tracked *.c outside tests/ and bench/) longer than "
        "the limit."
    )
    ap.add_argument(
        "--limit",
        type=int,
        default=LIMIT,
        help="most lines a function may have (default %(default)s)",
    )
    ap.add_argument(
        "--root", default=ROOT, help="the repository (default: the one holding this script)"
    )
    ap.add_argument("files", nargs="*", help="measure these files instead of the tracked ones")
    args = ap.parse_args(argv)
    if args.limit < 1:
        ap.error("--limit must be at least 1")
    try:
        files = args.files or tracked_c_files(args.root)
    except (OSError, subprocess.CalledProcessError) as e:
        print("c_function_length: cannot list the tracked files: %s" % e, file=sys.stderr)
        return 2
    over, bad = 0, 0
    for rel in files:
        path = rel if os.path.isabs(rel) else os.path.join(args.root, rel)
        if not os.path.exists(path):
            continue  # tracked but deleted in the working tree
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                found = functions(f.read())
        except (OSError, ValueError) as e:
            print("%s: cannot measure: %s" % (rel, e))
            bad += 1
            continue
        for name, first, last in found:
            n = last - first + 1
            if n > args.limit:
                print("%s:%d: %s is %d lines (limit %d)" % (rel, first, name, n, args.limit))
                over += 1
    if over or bad:
        unreadable = ", %d file(s) unreadable" % bad if bad else ""
        print("c_function_length: %d function(s) over %d lines%s" % (over, args.limit, unreadable))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
