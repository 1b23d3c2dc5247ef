#!/usr/bin/env python3
"""calls.py - the call graph of zarrfs between files, drawn from the built
objects' symbols (nm): a file calls another when its object leaves a
symbol undefined that the other's object defines (a function called, or a
table read). The include check (tools/includes.py) cannot see a circle
that goes through one shared header; this one can.

  tools/calls.py OBJECT...          print the graph (file -> files it calls)
  tools/calls.py --check OBJECT...  fail on a circle between files: each
                                    strongly connected component of more
                                    than one file, with one symbol per step
                                    of a circle through it

OBJECT are the .o files of the zarrfs binary (make check passes them as
$(libzarrfs_a_OBJECTS) $(zarrfs_OBJECTS) in ZARRFS_OBJECTS); a file is
named by its source (fs/engine/unit.o is fs/engine/unit.c). $NM names the
nm program (default nm)."""
import os, re, subprocess, sys

# Circles that are allowed, each a set of source files, with the reason.
# A circle added here needs a comment saying why it cannot be broken.
ALLOWED = [
    # The codec registry and its codecs: registry.c's table names each
    # codec's constructor (codec_gzip, ...) and each codec parses its
    # configuration with registry.c's helpers (codec_cfg_*), as a plugin
    # table does; the codecs that hold chains (sharding, vlen, optional)
    # build their inner chain through chain.c, which looks codecs up in
    # the registry. Nesting is what the formats say (a shard's inner
    # chunks have a chain of their own), so the recursion is real; the
    # codecs folder is one layer and includes.py keeps its headers in one
    # direction.
    {"codecs/" + f + ".c" for f in (
        "abytes bitround blosc bytes chain crc32c delta fixedscaleoffset "
        "gzip json2 msgpack numcodecs optional packbits registry reshape "
        "sharding transpose vlen vlen_interleaved zfp zstd").split()},
]

# Global definitions nm reports (upper case: text, data, bss, read-only,
# common, weak); "U" is an undefined reference.
DEFINED = set("TDBRCGSVW")


def source_of(obj):
    """fs/engine/unit.o -> fs/engine/unit.c (automake's per-target prefix,
    libzarrfs_a-, dropped when there is one)."""
    d, f = os.path.split(obj)
    f = re.sub(r"^[A-Za-z0-9_]+_a-|^zarrfs-", "", f)
    return os.path.join(d, re.sub(r"\.o(bj)?$", ".c", f))


def symbols(objs):
    """({file: set(defined)}, {file: set(undefined)}) from nm -P -A."""
    nm = os.environ.get("NM") or "nm"
    out = subprocess.run([nm, "-P", "-A"] + objs, check=True,
                         stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    defs = {source_of(o): set() for o in objs}
    undef = {source_of(o): set() for o in objs}
    for line in out.splitlines():
        head, _, rest = line.rpartition(": ")
        f = rest.split()
        if not head or len(f) < 2:
            continue
        name, kind, src = f[0], f[1], source_of(head)
        if kind == "U":
            undef[src].add(name)
        elif kind in DEFINED:
            defs[src].add(name)
    return defs, undef


def graph(defs, undef):
    """{file: {file it calls: sorted symbols}}."""
    owner = {}
    for f in sorted(defs):
        for s in defs[f]:
            owner.setdefault(s, f)
    g = {f: {} for f in defs}
    for f in sorted(undef):
        for s in sorted(undef[f]):
            o = owner.get(s)
            if o is not None and o != f:
                g[f].setdefault(o, []).append(s)
    return g


def components(g):
    """The strongly connected components of g (Tarjan, iterative so that a
    deep graph needs no deep recursion), each sorted."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def circle(g, comp):
    """A shortest circle through comp's first file, inside comp (breadth
    first): [f0, f1, ..., f0]."""
    inside, start = set(comp), comp[0]
    prev, queue = {}, [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(g[v]):
            if w not in inside:
                continue
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return path[::-1] + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return [start]


def main(argv):
    check = "--check" in argv
    objs = [a for a in argv if a != "--check"]
    if not objs:
        sys.stderr.write(__doc__)
        return 2
    g = graph(*symbols(objs))
    if not check:
        for f in sorted(g):
            print("%s -> %s" % (f, ", ".join(sorted(g[f])) or "(nothing)"))
        return 0
    bad = 0
    for comp in components(g):
        if len(comp) < 2 or any(set(comp) <= a for a in ALLOWED):
            continue
        bad += 1
        print("FAIL: call circle among %d files: %s" %
              (len(comp), ", ".join(comp)))
        c = circle(g, comp)
        for a, b in zip(c, c[1:]):
            print("  %s -> %s (%s)" % (a, b, g[a][b][0]))
    if not bad:
        print("call graph of %d files: no circle" % len(g))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
