# SPDX-License-Identifier: MIT
"""The structure of server/, checked from the objects the build made (`make check` runs it):

1. calls: a file calls into its own floor or the floors below it, never up. The floors are the include paths
   of Makefile.in (INC_*): core < http < node < target < cluster < api < jobs < server/ (main.c, modules.c), with
   metadata/ visible from node up, plugins/ (the loader) from target up and lua/ from jobs up, each of those on
   core only. The include rule alone does not catch a header declared low and implemented high; `nm` does.
2. no call cycle between the files of one floor (so none at all, given 1).
3. no source file of the tree over MAX_LINES lines.

A call is an undefined symbol (U) of one object that another object defines (T, D, B, R). Usage:
    structure.py BUILD_DIR SRC_DIR      check the build
    structure.py --selftest             show that an upward call and a cycle are caught
"""
import collections
import os
import subprocess
import sys
import tempfile

MAX_LINES = 1500
FLOORS = ["server/core", "server/http", "server/node", "server/target", "server/cluster", "server/api",
          "server/jobs", "server"]
SIDE = {"metadata": "server/node", "plugins": "server/target", "lua": "server/jobs"}  # lowest floor that sees it


def may_call(frm, to):
    """may a file of folder frm call into folder to?"""
    if frm == to or to == "server/core":
        return True
    if frm in SIDE:  # the side libraries sit on core only
        return False
    if to in SIDE:
        return FLOORS.index(frm) >= FLOORS.index(SIDE[to])
    if frm not in FLOORS or to not in FLOORS:
        return False
    return FLOORS.index(to) < FLOORS.index(frm)


def symbols(objs, root):
    """{file: set(defined)}, {file: set(undefined)} by source path (without .o) relative to root"""
    defs, uses = {}, collections.defaultdict(set)
    for o in objs:
        rel = os.path.relpath(o, root)[:-2]
        out = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
        defs.setdefault(rel, set())
        for line in out.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in "TDBR":
                defs[rel].add(p[2])
            elif len(p) == 2 and p[0] == "U":
                uses[rel].add(p[1])
    return defs, uses


def check_calls(objs, root):
    defs, uses = symbols(objs, root)
    owner = {}
    for f, ss in defs.items():
        for s in ss:
            owner[s] = f
    problems = []
    graph = collections.defaultdict(dict)  # file -> {callee file: a symbol}
    for f, us in sorted(uses.items()):
        for s in sorted(us):
            t = owner.get(s)
            if not t or t == f:
                continue
            graph[f].setdefault(t, s)
            ff, tf = os.path.dirname(f), os.path.dirname(t)
            if not may_call(ff, tf):
                problems.append("%s.c calls %s (defined in %s.c): %s may not call into %s (a floor above it, or "
                                "beside it)" % (f, s, t, ff, tf))
    # cycles between files of one folder (Tarjan)
    index, low, stack, on, sccs, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
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
                sccs.append(sorted(comp))

    sys.setrecursionlimit(100000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    for comp in sccs:
        members = set(comp)
        ties = ["%s.c -> %s.c (%s)" % (f, t, s) for f in comp for t, s in sorted(graph[f].items()) if t in members]
        problems.append("a call cycle between %d files: %s" % (len(comp), "; ".join(ties)))
    return problems


def check_lines(src):
    problems = []
    ls = subprocess.run(["git", "-C", src, "ls-files", "-co", "--exclude-standard"], capture_output=True, text=True)
    files = ls.stdout.split() if ls.returncode == 0 else []
    for f in files:
        if not f.endswith((".c", ".h", ".py", ".sh", ".lua")):
            continue
        try:
            with open(os.path.join(src, f), errors="replace") as fh:
                n = sum(1 for _ in fh)
        except OSError:
            continue
        if n > MAX_LINES:
            problems.append("%s has %d lines (at most %d: split it by the jobs it holds)" % (f, n, MAX_LINES))
    return problems


def objects(build, src):
    """the objects of the sources there are (an object left from a file moved or removed since is not)"""
    root = os.path.join(build, "obj")
    out = []
    for d in ["server", "metadata", "plugins", "lua"]:
        for dp, _, fs in os.walk(os.path.join(root, d)):
            for f in fs:
                o = os.path.join(dp, f)
                if f.endswith(".o") and os.path.exists(os.path.join(src, os.path.relpath(o, root)[:-2] + ".c")):
                    out.append(o)
    return sorted(out), root


def selftest():
    """an upward call (target -> cluster) and a cycle (two api files) must be reported; a downward call not"""
    cc = os.environ.get("CC", "cc")
    with tempfile.TemporaryDirectory() as tmp:
        src = {"server/cluster/up.c": "int sl_up(void) { return 1; }\n",
               "server/target/low.c": "int sl_up(void);\nint sl_low(void) { return sl_up(); }\n",
               "server/api/a.c": "int sl_b(void);\nint sl_a(void) { return sl_b(); }\n",
               "server/api/b.c": "int sl_a(void);\nint sl_b(void) { return sl_a() + 1; }\n",
               "server/jobs/j.c": "int sl_a(void);\nint sl_j(void) { return sl_a(); }\n"}
        objs = []
        for rel, text in src.items():
            c = os.path.join(tmp, "src", rel)
            o = os.path.join(tmp, "obj", rel[:-2] + ".o")
            os.makedirs(os.path.dirname(c), exist_ok=True)
            os.makedirs(os.path.dirname(o), exist_ok=True)
            with open(c, "w") as f:
                f.write(text)
            subprocess.run([cc, "-c", "-o", o, c], check=True)
            objs.append(o)
        got = check_calls(objs, os.path.join(tmp, "obj"))
        up = [p for p in got if "server/target/low.c calls sl_up" in p]
        cyc = [p for p in got if "call cycle between 2 files" in p and "server/api/a.c" in p]
        down = [p for p in got if "server/jobs/j.c" in p and "calls" in p]
        ok = len(up) == 1 and len(cyc) == 1 and not down and len(got) == 2
        for p in got:
            print("  selftest found: " + p)
        print("structure selftest: %s" % ("ok" if ok else "FAILED"))
        return 0 if ok else 1


def main():
    if sys.argv[1:] == ["--selftest"]:
        return selftest()
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    build, src = sys.argv[1], sys.argv[2]
    objs, root = objects(build, src)
    if not objs:
        print("structure: no objects under %s/obj (build first)" % build)
        return 1
    problems = check_calls(objs, root) + check_lines(src)
    for p in problems:
        print("structure: " + p)
    print("structure: %d objects, %d problem(s)" % (len(objs), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
