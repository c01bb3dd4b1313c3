#!/usr/bin/env python3
"""Lists the KILN_CHECK / KILN_FAIL sites whose message does not name the op first.

The convention (ARCHITECTURE.md section 11, docs/ops.md "Error messages"): a message starts with
the name of the op or public function that failed, then ": ", then the offending sizes, values
or dtypes ("topk: k (10) is out of range for dimension 0 of size 3"). The first part of the
message must therefore be either

  - a string literal "<name>: ..." where <name> is a registered op (from `kiln ops --json`, when
    --ops-json or --kiln names it, else from the KILN_REGISTER_OP / register_op sources) or a
    function declared in a kiln/ header, or "internal: ..." for invariants that no argument can
    break (they are not argument checks); or
  - a variable that holds the op's name (`op`, `name`, `op.name`, ...), followed by a literal
    that starts with ": " (or "_backward: " and the like).

Exit status 1 when a site breaks the rule; run it with no arguments from anywhere in the tree.
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCANNED = ["kiln/ops", "kiln/backend/cpu"]
# Variables (and expressions) that hold the name of the op that is checking its arguments.
OP_VARIABLES = {"op", "name", "kOp", "op.name", "def.name", "*name", "op_name", "who"}
MACRO = re.compile(r"\b(KILN_CHECK|KILN_FAIL)\s*\(")
NAMED = re.compile(r"^([A-Za-z_][A-Za-z0-9_.:]*?): ")


def strip_comments(src):
    """Blanks out comments (keeping offsets and newlines) so that they cannot hide or fake calls."""
    out, i, n = list(src), 0, len(src)
    while i < n:
        c = src[i]
        if c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            i = j + 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out[i:j] = " " * (j - i)
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out[i:j] = [ch if ch == "\n" else " " for ch in src[i:j]]
            i = j
        else:
            i += 1
    return "".join(out)


def split_args(src, start):
    """The top-level arguments of the call whose '(' ends just before `start`."""
    args, depth, i, begin = [], 0, start, start
    while i < len(src):
        c = src[i]
        if c in "\"'":
            j = i + 1
            while src[j] != c:
                j += 2 if src[j] == "\\" else 1
            i = j
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                args.append(src[begin:i].strip())
                return args
            depth -= 1
        elif c == "," and depth == 0:
            args.append(src[begin:i].strip())
            begin = i + 1
        i += 1
    raise ValueError("unbalanced call")


def literal_text(arg):
    """The value of an argument made only of adjacent string literals, else None."""
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', arg)
    if not parts or re.sub(r'"((?:[^"\\]|\\.)*)"', "", arg).strip():
        return None
    return "".join(parts)


def registered_ops(args):
    if args.ops_json:
        with open(args.ops_json) as f:
            return {op["name"] for op in json.load(f)}
    if args.kiln:
        out = subprocess.run([args.kiln, "ops", "--json"], check=True, capture_output=True, text=True)
        return {op["name"] for op in json.loads(out.stdout)}
    names = set()
    for path in sources(["kiln"]):
        src = open(path).read()
        names.update(re.findall(r"KILN_REGISTER_OP\((\w+)\)", src))
        names.update(re.findall(r'register_op\("(\w+)"\)', src))
    return names


def public_functions():
    """Names of the functions and methods declared in kiln/ headers (what users call)."""
    names = set()
    for path in sources(["kiln"]):
        if path.endswith(".h"):
            names.update(re.findall(r"\b([A-Za-z_]\w*)\s*\(", strip_comments(open(path).read())))
    return names


def sources(dirs):
    for d in dirs:
        for dirpath, _, files in os.walk(os.path.join(ROOT, d)):
            for f in sorted(files):
                if f.endswith((".cpp", ".h")):
                    yield os.path.join(dirpath, f)


def problem(args, known):
    """Why the message (its first two arguments) breaks the convention, or None."""
    first = args[0] if args else ""
    text = literal_text(first)
    if text is not None:
        m = NAMED.match(text)
        if not m:
            return "does not start with '<op>: '"
        name = m.group(1).split("::")[-1]  # sparse::mm names the function mm of sparse
        if name != "internal" and name not in known:
            return f"'{m.group(1)}' is not a registered op or a public function"
        return None
    if first not in OP_VARIABLES:
        return f"starts with '{first}', not with a literal or a variable holding the op's name"
    rest = literal_text(args[1]) if len(args) > 1 else None
    if rest is None or not re.match(r"^(_\w+)?: ", rest):
        return f"'{first}' is not followed by a literal starting with ': '"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kiln", help="the built `kiln` command, to read the op names from")
    parser.add_argument("--ops-json", help="the output of `kiln ops --json`, saved")
    args = parser.parse_args()
    known = registered_ops(args) | public_functions()
    bad, sites = [], 0
    for path in sources(SCANNED):
        src = strip_comments(open(path).read())
        for m in MACRO.finditer(src):
            if src[: m.start()].rstrip().endswith("#define"):
                continue
            sites += 1
            call = split_args(src, m.end())
            message = call[1:] if m.group(1) == "KILN_CHECK" else call
            why = problem(message, known)
            if why:
                line = src.count("\n", 0, m.start()) + 1
                bad.append(f"{os.path.relpath(path, ROOT)}:{line}: {why}")
    for b in bad:
        print(b)
    print(f"{sites} KILN_CHECK/KILN_FAIL sites under {', '.join(SCANNED)}; {len(bad)} do not name "
          "the op first")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
