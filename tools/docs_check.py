#!/usr/bin/env python3
"""docs_check.py - the docs say what the code is (tests/docs.sh, make check).

  tools/docs_check.py [SRCDIR]          fail (exit 1) on any drift below
  tools/docs_check.py --locks [SRCDIR]  print the locks the code declares

The module folders are src/, fs/ and codecs/ and the folders under them
that hold C files; each has a README.md. Checked:

1. Every file a doc names exists. A doc is docs/architecture.md or a
   folder README. Named are: a backquoted path or file name ending in .c
   or .h (`fs/views/view.c`, `unitwin.c`: a bare name in a README is
   looked up in its folder, elsewhere anywhere); a backquoted module
   (a file stem: `lsize`) in the first column of a table whose first
   header cell is "module", in the "owns" column of architecture.md's
   table of folders, or in a README's prose right after "(" or in the
   list that follows it ("(`log`, `logonce`: ...)").
2. Every module (a .c file) is named in its folder's README and in
   docs/architecture.md (not counting the include graph generated there),
   by its stem, its file name or its path.
3. The lock table (docs/architecture.md, between the markers
   <!-- locks: begin --> and <!-- locks: end -->) is the code's locks.
   A lock is a pthread_mutex_t or pthread_rwlock_t, a wait a
   pthread_cond_t, declared as a struct field (named `struct.field`) or
   at file scope (named `file-stem.name`). Each table row is
     | `struct.lock` | `struct.cond`, ... or none | `path` declaring it, ... | guards | then |
   and every lock and every wait of the code is in exactly one row, with
   the file that declares it; no row names one the code does not have.
4. In docs/architecture.md's read paths (between <!-- readpath: begin -->
   and <!-- readpath: end -->), each "name  path/file.c" on a line names
   a function (or macro) defined in that file.
"""
import os
import re
import sys

ROOTS = ("src", "fs", "codecs")
# Files a doc may name that are not in the tree (made by configure).
GENERATED = {"config.h"}
LOCKS_BEGIN, LOCKS_END = "<!-- locks: begin -->", "<!-- locks: end -->"
PATH_BEGIN, PATH_END = "<!-- readpath: begin -->", "<!-- readpath: end -->"
TICK = re.compile(r"`([^`\n]+)`")
FILE = re.compile(r"^(?:[\w.-]+/)*[A-Za-z][\w-]*\.[ch]$")
STEM = re.compile(r"^[a-z][a-z0-9_]*$")


def c_files(root):
    """Every .c/.h under the module folders, as paths relative to root."""
    out = []
    for top in ROOTS:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    out.append(os.path.relpath(os.path.join(d, f), root))
    return out


def module_folders(files):
    """Folders that hold a .c or .h file."""
    return sorted({os.path.dirname(f) for f in files})


def readmes(root, files):
    return [os.path.join(d, "README.md") for d in module_folders(files)]


def strip_comments(text):
    """C text with comments and string literals blanked (lines kept)."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'
                  r"'(?:\\.|[^'\\\n])*'", blank, text, flags=re.S)


LOCK_DECL = re.compile(
    r"\bpthread_(mutex|rwlock|cond)_t\s+(\w+)\s*(\[[^\]]*\])?\s*(=[^;]*)?;")


def code_locks(root, files):
    """{name: (kind, path)}: kind 'lock' (mutex, rwlock) or 'cond'; name
    struct.field for a field, stem.name at file scope. Locals and
    parameters are not declarations of a lock of the program's."""
    found = {}
    for rel in files:
        text = strip_comments(open(os.path.join(root, rel)).read())
        # each brace level: ("struct", X) for "struct X {", ("code", None)
        # for a function body or a block in one, else ("anon", None)
        stack = []
        tok = re.compile(r"\bstruct\s+(\w+)\s*\{|\{|\}|" + LOCK_DECL.pattern)
        for m in tok.finditer(text):
            s = m.group(0)
            if s.startswith("struct"):
                stack.append(("struct", m.group(1)))
            elif s == "{":
                # a brace after ")" is a function body (or a block)
                before = text[:m.start()].rstrip()
                kind = "code" if before.endswith((")", "else", "do", "=")) \
                    or (stack and stack[-1][0] == "code") else "anon"
                stack.append((kind, None))
            elif s == "}":
                if stack:
                    stack.pop()
            else:
                what = "cond" if m.group(2) == "cond" else "lock"
                field = m.group(3)
                if any(k == "code" for k, _ in stack):
                    continue  # a local
                owner = next((n for k, n in reversed(stack)
                              if k == "struct"), None)
                if owner is None and stack:
                    continue
                name = "%s.%s" % (owner or os.path.basename(rel)[:-2], field)
                found[name] = (what, rel)
    return found


def table_rows(block):
    """The cells of each row of the first markdown table in block."""
    rows = []
    for line in block.splitlines():
        line = line.strip()
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in
                 re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if all(re.fullmatch(r":?-+:?", c) for c in cells if c):
            continue
        rows.append(cells)
    return rows


def doc_locks(doc, bad):
    """{name: (kind, path)} from the lock table."""
    if LOCKS_BEGIN not in doc or LOCKS_END not in doc:
        bad.append("docs/architecture.md has no lock table (%s)" %
                   LOCKS_BEGIN)
        return {}
    block = doc.split(LOCKS_BEGIN, 1)[1].split(LOCKS_END, 1)[0]
    rows = table_rows(block)[1:]  # past the header
    out = {}
    for cells in rows:
        if len(cells) < 5:
            bad.append("lock table row %r: 5 columns wanted" % cells[0])
            continue
        locks = TICK.findall(cells[0])
        conds = TICK.findall(cells[1])
        paths = [p for p in TICK.findall(cells[2]) if FILE.match(p)]
        if len(locks) != 1 or not paths:
            bad.append("lock table row %r: one `struct.lock` and the "
                       "`path` that declares it wanted" % cells[0])
            continue
        for name, what in [(locks[0], "lock")] + [(c, "cond") for c in conds]:
            if name in out:
                bad.append("lock table names %s twice" % name)
            out[name] = (what, paths)
    return out


def check_locks(root, files, doc, bad):
    code = code_locks(root, files)
    shown = doc_locks(doc, bad)
    for name, (what, path) in sorted(code.items()):
        if name not in shown:
            bad.append("%s declares %s %s, which the lock table of "
                       "docs/architecture.md does not name" %
                       (path, "wait" if what == "cond" else "lock", name))
        elif shown[name][0] != what:
            bad.append("lock table: %s is a %s in the code (%s)" %
                       (name, "wait (cond)" if what == "cond" else "lock",
                        path))
        elif path not in shown[name][1]:
            bad.append("lock table: %s is declared in %s, not %s" %
                       (name, path, ", ".join(dict.fromkeys(shown[name][1]))))
    for name in sorted(set(shown) - set(code)):
        bad.append("lock table names %s, which the code does not declare "
                   "(no pthread_mutex_t/rwlock_t/cond_t by that name)" % name)


def named_files(doc_path, text, folder, files, bad):
    """Check every backquoted .c/.h name of a doc exists."""
    base = {}
    for f in files:
        base.setdefault(os.path.basename(f), []).append(f)
    rel_doc = doc_path
    for tok in TICK.findall(text):
        if not FILE.match(tok) or tok in GENERATED:
            continue
        if "/" in tok:
            cands = [os.path.normpath(tok), os.path.normpath(
                os.path.join(folder, tok))]
            if not any(os.path.exists(os.path.join(ROOT, c)) for c in cands):
                bad.append("%s names %s, which does not exist" %
                           (rel_doc, tok))
        else:
            here = folder and os.path.exists(os.path.join(ROOT, folder, tok))
            if not here and (folder or tok not in base):
                if folder and tok in base:
                    bad.append("%s names %s, which is not in %s/ (it is %s)" %
                               (rel_doc, tok, folder, ", ".join(base[tok])))
                else:
                    bad.append("%s names %s, which does not exist" %
                               (rel_doc, tok))


def module_refs(text, is_readme):
    """Backquoted module stems in a module context (see the top)."""
    refs = []
    lines = text.splitlines()
    header = None
    for line in lines:
        s = line.strip()
        if s.startswith("|"):
            cells = [c.strip() for c in s.strip("|").split("|")]
            if header is None:
                header = [c.lower() for c in cells]
                continue
            if all(re.fullmatch(r":?-+:?", c) for c in cells if c):
                continue
            if header and header[0] == "module":
                refs += [t for t in TICK.findall(cells[0]) if STEM.match(t)]
            elif header and header[:2] == ["folder", "owns"] and len(cells) > 1:
                refs += [t for t in TICK.findall(cells[1]) if STEM.match(t)]
        else:
            header = None
    if is_readme:
        prose = "\n".join(l for l in lines if not l.strip().startswith("|"))
        for m in re.finditer(r"\(((?:\s*`[a-z][a-z0-9_]*`\s*(?:,|and)?)+)",
                             prose):
            refs += TICK.findall(m.group(1))
    return refs


def check_modules(root, files, bad):
    stems = {}
    for f in files:
        stems.setdefault(os.path.basename(f)[:-2], []).append(f)
    docs = [("docs/architecture.md", "")] + [
        (r, os.path.dirname(r)) for r in readmes(root, files)]
    for rel, folder in docs:
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            bad.append("%s/ holds modules and no README.md" % folder)
            continue
        text = open(path).read()
        named_files(rel, text, folder, files, bad)
        for stem in module_refs(text, bool(folder)):
            if folder:
                ok = any(os.path.dirname(f) == folder or
                         os.path.dirname(f).startswith(folder + "/")
                         for f in stems.get(stem, []))
                if not ok and stem in stems:
                    ok = True  # a module of another folder, named as such
            else:
                ok = stem in stems
            if not ok:
                bad.append("%s names module %s, which does not exist "
                           "(no %s.c or %s.h)" % (rel, stem, stem, stem))
    # every .c is named in docs/architecture.md (outside the include graph
    # tools/includes.py generates there) and in its own folder's README
    arch = open(os.path.join(root, "docs/architecture.md")).read()
    if "<!-- includes.py: begin -->" in arch:
        arch = arch.split("<!-- includes.py: begin -->")[0] + \
            arch.split("<!-- includes.py: end -->", 1)[-1]
    arch_words = set(TICK.findall(arch))
    for f in files:
        name = os.path.basename(f)
        if f.endswith(".c") and not (
                {name[:-2], name, f} & arch_words or
                any(w.endswith("/" + name) for w in arch_words)):
            bad.append("%s is named nowhere in docs/architecture.md (its "
                       "folder's row or module table should say what `%s` "
                       "owns)" % (f, name[:-2]))
    for f in files:
        if not f.endswith(".c"):
            continue
        folder, name = os.path.split(f)
        readme = os.path.join(root, folder, "README.md")
        if not os.path.exists(readme):
            continue
        words = set(TICK.findall(open(readme).read()))
        if not ({name[:-2], name, f} & words or
                any(w.endswith("/" + name) for w in words)):
            bad.append("%s is named in no README: %s/README.md should say "
                       "what `%s` owns" % (f, folder, name[:-2]))


def defined_in(root, rel, fn):
    text = strip_comments(open(os.path.join(root, rel)).read())
    return re.search(r"^[A-Za-z_][\w \t\*]*\b%s\s*\([^;{]*\)\s*\{" %
                     re.escape(fn), text, re.M | re.S) is not None or \
        re.search(r"^#define\s+%s\b" % re.escape(fn), text, re.M) is not None


def check_paths(root, doc, bad):
    blocks = doc.split(PATH_BEGIN)[1:]
    for b in blocks:
        b = b.split(PATH_END, 1)[0]
        pairs = re.findall(r"(\w+)\s+((?:src|fs|codecs)/[\w/]+\.[ch])\b", b)
        for fn, rel in pairs:
            if not os.path.exists(os.path.join(root, rel)):
                bad.append("read path: %s does not exist" % rel)
            elif not defined_in(root, rel, fn):
                bad.append("read path: %s is not defined in %s" % (fn, rel))


ROOT = "."


def main(argv):
    global ROOT
    args = [a for a in argv if not a.startswith("--")]
    ROOT = root = args[0] if args else "."
    files = c_files(root)
    if "--locks" in argv:
        for name, (what, path) in sorted(code_locks(root, files).items(),
                                         key=lambda x: (x[1][1], x[0])):
            print("%-40s %-5s %s" % (name, what, path))
        return 0
    bad = []
    check_modules(root, files, bad)
    doc = open(os.path.join(root, "docs/architecture.md")).read()
    check_locks(root, files, doc, bad)
    check_paths(root, doc, bad)
    bad = list(dict.fromkeys(bad))  # once each, in order
    for b in bad:
        print("FAIL: " + b)
    if not bad:
        print("docs name only what exists, every module is named, the lock "
              "table is the code's: ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
