#!/usr/bin/env python3
"""includes.py - the include graph of zarrfs, drawn from the #include lines.

  tools/includes.py [SRCDIR]          print the graph (folders, then modules)
  tools/includes.py --check [SRCDIR]  fail on a circle, on an include that
                                      points up (a folder including one it
                                      may not), or on a docs/architecture.md
                                      whose generated graph is not this one

A module is a .c/.h pair (fs/views/view.c and fs/views/view.h are one node). Folders
are the layers; LAYERS says which folders each may include. Tests, bench
and examples sit above everything and are not drawn."""
import os, re, sys

# Everything below fs/: what each folder of fs/ may include besides fs/.
BELOW_FS = ["src/util", "src/json", "src/zarr", "src/io", "src/net",
            "src/parquet", "src/store", "src/store/icechunk", "src/app",
            "codecs"]
# folder -> folders it may include (besides itself), lowest layer first.
LAYERS = [
    ("src/util", []),
    ("src/json", ["src/util"]),
    ("src/zarr", ["src/util", "src/json"]),
    ("src/io", ["src/util"]),
    ("src/net", ["src/util", "src/io"]),
    ("src/parquet", ["src/util"]),
    ("codecs", ["src/util", "src/json", "src/zarr", "src/io"]),
    ("src/store", ["src/util", "src/json", "src/zarr", "src/io", "src/net",
                   "src/parquet"]),
    ("src/store/icechunk", ["src/util", "src/json", "src/zarr", "src/io",
                            "src/net", "src/store"]),
    ("src/app", ["src/util", "src/json", "src/zarr", "src/io", "src/net",
                 "src/parquet", "src/store", "src/store/icechunk"]),
    ("fs/text", BELOW_FS),
    ("fs/engine", BELOW_FS + ["fs/text"]),
    ("fs/views", BELOW_FS + ["fs/text", "fs/engine"]),
    ("fs/namespace", BELOW_FS + ["fs/text", "fs/engine", "fs/views"]),
    ("fs", BELOW_FS + ["fs/text", "fs/engine", "fs/views", "fs/namespace"]),
]
ALLOWED = dict(LAYERS)
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
BEGIN = "<!-- includes.py: begin -->"
END = "<!-- includes.py: end -->"


def modules(root):
    """{module: set(modules it includes)} for every .c/.h under the layers."""
    graph = {}
    for folder, _ in LAYERS:
        d = os.path.join(root, folder)
        for f in sorted(os.listdir(d)):
            if not f.endswith((".c", ".h")):
                continue
            mod = folder + "/" + f[:-2]
            deps = graph.setdefault(mod, set())
            for inc in INC.findall(open(os.path.join(d, f)).read()):
                p = os.path.normpath(os.path.join(folder, inc))
                if not os.path.exists(os.path.join(root, p)):
                    continue  # config.h, generated
                dep = p[:-2]
                if dep != mod:
                    deps.add(dep)
    return graph


def folder_of(mod):
    return mod.rsplit("/", 1)[0]


def cycles(graph):
    """Every edge that closes a circle (depth-first search)."""
    state, found = {}, []

    def visit(n, stack):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                found.append(stack[stack.index(m):] + [m])
            elif not state.get(m):
                visit(m, stack)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if not state.get(n):
            visit(n, [])
    return found


def draw(graph):
    out = ["Folders (an arrow is \"includes\"; each may include only what",
           "its row names):", ""]
    width = max(len(f) for f, _ in LAYERS)
    for folder, allowed in LAYERS:
        used = sorted({folder_of(d) for m, ds in graph.items()
                       if folder_of(m) == folder for d in ds} - {folder})
        out.append("%-*s -> %s" % (width, folder,
                                   ", ".join(used) or "(nothing)"))
    out += ["", "Modules (a module is a .c/.h pair; includes across folders",
            "and within its own):", ""]
    for m in sorted(graph):
        deps = sorted(graph[m])
        out.append("%s -> %s" % (m, ", ".join(deps) or "(nothing)"))
    return "\n".join(out) + "\n"


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    root = args[0] if args else "."
    graph = modules(root)
    bad = []
    for m, deps in sorted(graph.items()):
        for d in sorted(deps):
            fm, fd = folder_of(m), folder_of(d)
            if fm != fd and fd not in ALLOWED[fm]:
                bad.append("%s includes %s: %s may not include %s" %
                           (m, d, fm, fd))
    for c in cycles(graph):
        bad.append("circle: " + " -> ".join(c))
    text = draw(graph)
    if not check:
        sys.stdout.write(text)
        return 0 if not bad else 1
    doc = open(os.path.join(root, "docs/architecture.md")).read()
    if BEGIN not in doc or END not in doc:
        bad.append("docs/architecture.md has no generated graph (%s)" % BEGIN)
    else:
        shown = doc.split(BEGIN, 1)[1].split(END, 1)[0]
        if shown.strip().strip("`").strip() != text.strip():
            bad.append("docs/architecture.md's include graph is stale: "
                       "run tools/includes.py --update")
    for b in bad:
        print("FAIL: " + b)
    return 1 if bad else 0


def update(root):
    doc_path = os.path.join(root, "docs/architecture.md")
    doc = open(doc_path).read()
    block = BEGIN + "\n```\n" + draw(modules(root)) + "```\n" + END
    if BEGIN in doc:
        pre = doc.split(BEGIN, 1)[0]
        post = doc.split(END, 1)[1]
        doc = pre + block + post
    else:
        doc += "\n" + block + "\n"
    open(doc_path, "w").write(doc)


if __name__ == "__main__":
    if "--update" in sys.argv:
        rest = [a for a in sys.argv[1:] if a != "--update"]
        update(rest[0] if rest else ".")
        sys.exit(0)
    sys.exit(main(sys.argv[1:]))
