#!/usr/bin/python3
"""icechunk_writer.py - an Icechunk repository reader and writer for tests.

Written from the Icechunk specification (spec-v1.md, spec-v2.md and the
flatbuffers schemas of earth-mover/icechunk), independently of zarrfs's C
reader, so that the two meet only at the spec.

  dump REPO                   the repository's structure as JSON
  describe REPO               a repository as a description (write's input)
  write OUT DESC [--spec 1|2] a repository from a JSON description
  verify REPO DESC            describe REPO gives DESC back
  compare A B                 dumps of two repositories, ids and times aside
  scale OUT [--spec 1|2] [-n N] [-m M] [-s S]
                              N chunk refs in M manifests, S snapshots
  hostile OUT CASE [--spec 1|2] [-n N] [--message-bytes B]
                              a repository no honest writer makes

Debian packages only: python3-flatbuffers (Builder, FlexBuffers),
python3-zstandard (or the zstd command), python3-numpy (scale).
See tests/writers/README.md for what is covered and what is left out.
"""

import argparse
import datetime
import hashlib
import json
import os
import struct
import subprocess
import sys

MAGIC = "ICE🧊CHUNK".encode("utf-8")
HEADER_LEN = 39
FILE_SNAPSHOT, FILE_MANIFEST, FILE_TXLOG, FILE_REPO = 1, 2, 4, 6
FIRST_SNAPSHOT = "1CECHNKREP0F1RSTCMT0"
WRITER_NAME = "zarrfs-test-writer"
UNION_ARRAY, UNION_GROUP = 1, 2
# UpdateType union members used by the writer (order of repo.fbs).
UPD_REPO_INITIALIZED, UPD_TAG_CREATED, UPD_TAG_DELETED = 1, 5, 6
UPD_BRANCH_CREATED, UPD_NEW_COMMIT = 7, 10
UPDATE_NAMES = [None, "RepoInitialized", "RepoMigrated", "ConfigChanged",
                "MetadataChanged", "TagCreated", "TagDeleted", "BranchCreated",
                "BranchDeleted", "BranchReset", "NewCommit", "CommitAmended",
                "NewDetachedSnapshot", "GCRan", "ExpirationRan",
                "FeatureFlagChanged", "RepoStatusChanged"]


class FormatError(ValueError):
    """A file that does not follow the spec."""


# ---------------------------------------------------------------- ids

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def b32_encode(raw):
    """Crockford base 32, upper case, no padding, zero bits appended."""
    bits = int.from_bytes(raw, "big")
    nbits = len(raw) * 8
    nchars = (nbits + 4) // 5
    bits <<= nchars * 5 - nbits
    return "".join(CROCKFORD[(bits >> (5 * (nchars - 1 - i))) & 31]
                   for i in range(nchars))


def b32_decode(text, nbytes):
    """Inverse of b32_encode for an id of nbytes bytes."""
    if len(text) != (nbytes * 8 + 4) // 5:
        raise FormatError("id %r: wrong length" % text)
    bits = 0
    for c in text:
        i = CROCKFORD.find(c)
        if i < 0:
            raise FormatError("id %r: not Crockford base 32" % text)
        bits = bits << 5 | i
    pad = len(text) * 5 - nbytes * 8
    if bits & ((1 << pad) - 1):
        raise FormatError("id %r: nonzero padding bits" % text)
    return (bits >> pad).to_bytes(nbytes, "big")


def derive_id(nbytes, *parts):
    """Deterministic pseudo-random id bytes from a label."""
    h = hashlib.sha256("\0".join(str(p) for p in parts).encode()).digest()
    return h[:nbytes]


def iso_time(us):
    """Microseconds since the epoch as ISO 8601 UTC."""
    t = datetime.datetime.fromtimestamp(us // 1000000, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + ".%06dZ" % (us % 1000000)


def parse_time(value):
    """A description's time (microseconds or ISO 8601) as microseconds."""
    if isinstance(value, int):
        return value
    t = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.timezone.utc)
    delta = t - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return (delta.days * 86400 + delta.seconds) * 1000000 + delta.microseconds


# ---------------------------------------------------------------- zstd

try:
    import zstandard
except ImportError:
    zstandard = None


def zstd_decompress(data):
    """Whole-frame zstd decompression (python3-zstandard or zstd -d)."""
    if zstandard is not None:
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    return subprocess.run(["zstd", "-dc"], input=data, check=True,
                          stdout=subprocess.PIPE).stdout


def zstd_compress(data):
    """zstd compression at the default level."""
    if zstandard is not None:
        return zstandard.ZstdCompressor(level=3).compress(data)
    return subprocess.run(["zstd", "-c", "-q"], input=data, check=True,
                          stdout=subprocess.PIPE).stdout


# ---------------------------------------------------------------- msgpack
# Spec 1 snapshot metadata values are MessagePack; the JSON subset is enough.


def msgpack_pack(v):
    """MessagePack of a JSON value."""
    if v is None:
        return b"\xc0"
    if v is True or v is False:
        return b"\xc3" if v else b"\xc2"
    if isinstance(v, int):
        if 0 <= v < 128:
            return bytes([v])
        if -32 <= v < 0:
            return struct.pack("b", v)
        return b"\xd3" + struct.pack(">q", v)
    if isinstance(v, float):
        return b"\xcb" + struct.pack(">d", v)
    if isinstance(v, str):
        raw = v.encode("utf-8")
        return b"\xdb" + struct.pack(">I", len(raw)) + raw
    if isinstance(v, list):
        return b"\xdd" + struct.pack(">I", len(v)) + \
            b"".join(msgpack_pack(x) for x in v)
    if isinstance(v, dict):
        return b"\xdf" + struct.pack(">I", len(v)) + \
            b"".join(msgpack_pack(k) + msgpack_pack(x) for k, x in v.items())
    raise ValueError("no MessagePack for %r" % (v,))


def msgpack_unpack(raw, pos=0):
    """(value, next position) of one MessagePack value (JSON subset)."""
    b = raw[pos]
    pos += 1
    fixed = {0xc0: None, 0xc2: False, 0xc3: True}
    if b in fixed:
        return fixed[b], pos
    if b < 0x80:
        return b, pos
    if b >= 0xe0:
        return b - 256, pos

    def take(n):
        """The next n bytes, checked against the end of the value."""
        if pos + n > len(raw):
            raise FormatError("MessagePack value truncated")
        return raw[pos:pos + n]
    ints = {0xcc: ">B", 0xcd: ">H", 0xce: ">I", 0xcf: ">Q", 0xd0: ">b",
            0xd1: ">h", 0xd2: ">i", 0xd3: ">q", 0xca: ">f", 0xcb: ">d"}
    if b in ints:
        n = struct.calcsize(ints[b])
        return struct.unpack(ints[b], take(n))[0], pos + n
    if 0xa0 <= b <= 0xbf or b in (0xd9, 0xda, 0xdb):
        if b <= 0xbf:
            n = b & 31
        else:
            w = {0xd9: 1, 0xda: 2, 0xdb: 4}[b]
            n = int.from_bytes(take(w), "big")
            pos += w
        return take(n).decode("utf-8"), pos + n
    if 0x90 <= b <= 0x9f or b in (0xdc, 0xdd):
        if b <= 0x9f:
            n = b & 15
        else:
            w = 2 if b == 0xdc else 4
            n = int.from_bytes(take(w), "big")
            pos += w
        out = []
        for _ in range(n):
            v, pos = msgpack_unpack(raw, pos)
            out.append(v)
        return out, pos
    if 0x80 <= b <= 0x8f or b in (0xde, 0xdf):
        if b <= 0x8f:
            n = b & 15
        else:
            w = 2 if b == 0xde else 4
            n = int.from_bytes(take(w), "big")
            pos += w
        out = {}
        for _ in range(n):
            k, pos = msgpack_unpack(raw, pos)
            v, pos = msgpack_unpack(raw, pos)
            out[k] = v
        return out, pos
    raise FormatError("MessagePack type 0x%02x not handled" % b)


# ---------------------------------------------------------------- header


def read_file(path, spec, ftype):
    """A metadata file's flatbuffer after checking its header."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < HEADER_LEN or data[:12] != MAGIC:
        raise FormatError("%s: not an Icechunk file (magic)" % path)
    if data[36] not in (1, 2) or (spec is not None and data[36] > spec):
        raise FormatError("%s: spec version %d in a spec %s repository" %
                          (path, data[36], spec))
    if data[37] != ftype:
        raise FormatError("%s: file type %d, expected %d" %
                          (path, data[37], ftype))
    if data[38] == 0:
        body = data[HEADER_LEN:]
    elif data[38] == 1:
        body = zstd_decompress(data[HEADER_LEN:])
    else:
        raise FormatError("%s: compression %d" % (path, data[38]))
    writer = data[12:36].decode("utf-8", "replace").rstrip(" ")
    return body, writer, data[36]


def header(spec, ftype, compression):
    """The 39-byte header of a metadata file."""
    name = WRITER_NAME.encode().ljust(24, b" ")
    return MAGIC + name + bytes([spec, ftype, compression])


def write_file(path, spec, ftype, flatbuf, compress=True):
    """Writes a metadata file: header, then the (compressed) flatbuffer."""
    body = zstd_compress(flatbuf) if compress else flatbuf
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(header(spec, ftype, 1 if compress else 0))
        f.write(body)
    return HEADER_LEN + len(body)


# ---------------------------------------------------------------- flatbuffers
# A verifying reader: every offset is bounds-checked before it is followed,
# every scalar read checks its alignment.


class FbBuf:
    """A flatbuffer held in memory, read with bounds checks."""

    def __init__(self, data, what):
        """Keeps the bytes and a name for messages."""
        self.d = bytes(data)
        self.what = what

    def need(self, pos, size, align=1):
        """Checks that size bytes at pos are inside the buffer, aligned."""
        if pos < 0 or size < 0 or pos + size > len(self.d):
            raise FormatError("%s: offset %d+%d out of bounds (%d)" %
                              (self.what, pos, size, len(self.d)))
        if pos % align:
            raise FormatError("%s: offset %d not aligned to %d" %
                              (self.what, pos, align))

    def scalar(self, pos, fmt):
        """A little-endian scalar at an absolute position."""
        size = struct.calcsize("<" + fmt)
        self.need(pos, size, size)
        return struct.unpack_from("<" + fmt, self.d, pos)[0]

    def follow(self, pos):
        """The absolute position a uoffset at pos points to."""
        return pos + self.scalar(pos, "I")

    def root(self):
        """The root table, found through the buffer's first uoffset."""
        return FbTable(self, self.follow(0))


class FbTable:
    """One table: its position and its vtable, both checked."""

    def __init__(self, buf, pos):
        """Locates and checks the table's vtable and extent."""
        self.b = buf
        self.pos = pos
        self.vt = pos - buf.scalar(pos, "i")
        self.vtlen = buf.scalar(self.vt, "H")
        self.tlen = buf.scalar(self.vt + 2, "H")
        if self.vtlen < 4 or self.vtlen % 2 or self.tlen < 4:
            raise FormatError("%s: bad vtable at %d" % (buf.what, self.vt))
        buf.need(self.vt, self.vtlen)
        buf.need(pos, self.tlen)

    def field(self, slot):
        """Absolute position of a field, None when absent."""
        o = 4 + 2 * slot
        if o + 2 > self.vtlen:
            return None
        off = self.b.scalar(self.vt + o, "H")
        if off == 0:
            return None
        if off >= self.tlen:
            raise FormatError("%s: field %d outside its table" %
                              (self.b.what, slot))
        return self.pos + off

    def scalar(self, slot, fmt, default=0):
        """A scalar field, or its default when absent."""
        p = self.field(slot)
        return default if p is None else self.b.scalar(p, fmt)

    def struct(self, slot, size, align=1):
        """An inline struct field's bytes, None when absent."""
        p = self.field(slot)
        if p is None:
            return None
        self.b.need(p, size, align)
        if p + size > self.pos + self.tlen:
            raise FormatError("%s: struct field %d outside its table" %
                              (self.b.what, slot))
        return self.b.d[p:p + size]

    def table(self, slot):
        """A sub-table field, None when absent."""
        p = self.field(slot)
        return None if p is None else FbTable(self.b, self.b.follow(p))

    def vector(self, slot, elem_size, align=1):
        """(start, count) of a vector field, None when absent."""
        p = self.field(slot)
        if p is None:
            return None
        v = self.b.follow(p)
        n = self.b.scalar(v, "I")
        self.b.need(v + 4, n * elem_size, align)
        return v + 4, n

    def bytes(self, slot):
        """A [ubyte] field's bytes, None when absent."""
        v = self.vector(slot, 1)
        return None if v is None else self.b.d[v[0]:v[0] + v[1]]

    def string(self, slot):
        """A string field (NUL-terminated, UTF-8), None when absent."""
        v = self.vector(slot, 1)
        if v is None:
            return None
        self.b.need(v[0], v[1] + 1)
        if self.b.d[v[0] + v[1]] != 0:
            raise FormatError("%s: string without NUL" % self.b.what)
        return self.b.d[v[0]:v[0] + v[1]].decode("utf-8")

    def tables(self, slot):
        """A vector of tables, None when absent."""
        v = self.vector(slot, 4, 4)
        if v is None:
            return None
        return [FbTable(self.b, self.b.follow(v[0] + 4 * i))
                for i in range(v[1])]

    def strings(self, slot):
        """A vector of strings, None when absent."""
        v = self.vector(slot, 4, 4)
        if v is None:
            return None
        out = []
        for i in range(v[1]):
            s = self.b.follow(v[0] + 4 * i)
            n = self.b.scalar(s, "I")
            self.b.need(s + 4, n + 1)
            out.append(self.b.d[s + 4:s + 4 + n].decode("utf-8"))
        return out

    def structs(self, slot, size, align):
        """A vector of structs as their bytes, None when absent."""
        v = self.vector(slot, size, align)
        if v is None:
            return None
        return [self.b.d[v[0] + size * i:v[0] + size * (i + 1)]
                for i in range(v[1])]

    def scalars(self, slot, fmt):
        """A vector of scalars, None when absent."""
        size = struct.calcsize("<" + fmt)
        v = self.vector(slot, size, size)
        if v is None:
            return None
        return list(struct.unpack_from("<%d%s" % (v[1], fmt), self.b.d, v[0]))

    def required(self, value, name):
        """The value of a field the schema marks required."""
        if value is None:
            raise FormatError("%s: required field %s absent" %
                              (self.b.what, name))
        return value


# ---------------------------------------------------------------- decoding


def decode_metadata(items, spec):
    """MetadataItem list as {name: value}: FlexBuffers (spec 2) or
    MessagePack (spec 1); {"hex": ...} when it does not decode."""
    out = {}
    for it in items or []:
        name = it.required(it.string(0), "MetadataItem.name")
        raw = it.required(it.bytes(1), "MetadataItem.value")
        value = {"hex": raw.hex()}
        try:
            if spec == 2:
                from flatbuffers import flexbuffers
                value = flexbuffers.Loads(raw)
            else:
                decoded, end = msgpack_unpack(raw)
                if end == len(raw):
                    value = decoded
        except Exception:  # an undecodable value is still shown, as hex
            pass
        out[name] = value
    return out


def decode_snapshot(path, spec, keep_text=False):
    """A snapshot file as a dict (nodes with their manifest refs)."""
    body, writer, version = read_file(path, spec, FILE_SNAPSHOT)
    t = FbBuf(body, path).root()
    snap = {
        "id": b32_encode(t.required(t.struct(0, 12), "Snapshot.id")),
        "writer": writer,
        "spec_version": version,
        "message": t.required(t.string(4), "Snapshot.message"),
        "flushed_at": t.scalar(3, "Q"),
    }
    parent = t.struct(1, 12)
    snap["parent_in_file"] = b32_encode(parent) if parent else None
    snap["time"] = iso_time(snap["flushed_at"])
    snap["metadata"] = decode_metadata(t.required(t.tables(5), "metadata"),
                                       version)
    files = []
    for raw in t.required(t.structs(6, 32, 8), "Snapshot.manifest_files"):
        size, count = struct.unpack_from("<QI", raw, 16)
        files.append({"id": b32_encode(raw[:12]), "size_bytes": size,
                      "num_chunk_refs": count})
    for fi in t.tables(7) or []:
        files.append({"id": b32_encode(fi.required(fi.struct(0, 12), "id")),
                      "size_bytes": fi.scalar(1, "Q"),
                      "num_chunk_refs": fi.scalar(2, "I")})
    snap["manifest_files"] = files
    nodes = []
    for n in t.required(t.tables(2), "Snapshot.nodes"):
        node = {
            "path": n.required(n.string(1), "NodeSnapshot.path"),
            "node_id": b32_encode(n.required(n.struct(0, 8), "id")),
        }
        user_data = n.required(n.bytes(2), "NodeSnapshot.user_data")
        if keep_text:
            node["user_data_text"] = user_data.decode("utf-8")
        try:
            node["user_data"] = json.loads(user_data.decode("utf-8"))
        except ValueError:
            node["user_data_hex"] = user_data.hex()
        kind = n.scalar(3, "B")
        data = n.required(n.table(4), "NodeSnapshot.node_data")
        if kind == UNION_GROUP:
            node["type"] = "group"
        elif kind == UNION_ARRAY:
            node["type"] = "array"
            shape = []
            for raw in data.required(data.structs(0, 16, 8), "shape"):
                length, chunk = struct.unpack("<QQ", raw)
                shape.append({"array_length": length, "chunk_length": chunk})
            for d in data.tables(3) or []:
                shape.append({"array_length": d.scalar(0, "Q"),
                              "num_chunks": d.scalar(1, "I")})
            node["shape"] = shape
            names = data.tables(1)
            if names is not None:
                node["dimension_names"] = [d.string(0) for d in names]
            refs = []
            for m in data.required(data.tables(2), "ArrayNodeData.manifests"):
                ext = [list(struct.unpack("<II", r)) for r in
                       m.required(m.structs(1, 8, 4), "ManifestRef.extents")]
                refs.append({"id": b32_encode(m.required(m.struct(0, 12),
                                                         "object_id")),
                             "extents": ext})
            node["manifests"] = refs
        else:
            raise FormatError("%s: node_data type %d" % (path, kind))
        nodes.append(node)
    snap["nodes"] = nodes
    return snap


def decode_manifest(path, spec, chunks_dir=None):
    """A manifest file as {node id: [chunk refs]}; native refs get the
    sha256 of their bytes when chunks_dir is given."""
    body, _, _ = read_file(path, spec, FILE_MANIFEST)
    t = FbBuf(body, path).root()
    out = {"id": b32_encode(t.required(t.struct(0, 12), "Manifest.id")),
           "arrays": {}}
    if t.field(2) is not None:
        out["location_dictionary_bytes"] = len(t.bytes(2))
        out["compression_algorithm"] = t.scalar(3, "B", 1)
    dictionary = t.bytes(2)
    for a in t.required(t.tables(1), "Manifest.arrays"):
        node = b32_encode(a.required(a.struct(0, 8), "ArrayManifest.node_id"))
        refs = []
        for r in a.required(a.tables(1), "ArrayManifest.refs"):
            ref = {"index": r.required(r.scalars(0, "I"), "ChunkRef.index")}
            inline = r.bytes(1)
            chunk_id = r.struct(4, 12)
            location = r.string(5)
            packed = r.bytes(8)
            if inline is not None:
                ref["type"] = "inline"
                ref["data_hex"] = inline.hex()
            elif chunk_id is not None:
                ref["type"] = "native"
                ref["chunk_id"] = b32_encode(chunk_id)
                ref["offset"] = r.scalar(2, "Q")
                ref["length"] = r.scalar(3, "Q")
                if chunks_dir is not None:
                    ref["sha256"] = chunk_sha(chunks_dir, ref)
            elif location is not None or packed is not None:
                ref["type"] = "virtual"
                if location is None:
                    location = unpack_location(packed, dictionary,
                                               t.scalar(3, "B", 1))
                    ref["location_compressed"] = True
                ref["location"] = location
                ref["offset"] = r.scalar(2, "Q")
                ref["length"] = r.scalar(3, "Q")
                etag = r.string(6)
                if etag is not None:
                    ref["etag"] = etag
                lm = r.scalar(7, "I")
                if lm:
                    ref["last_modified"] = lm
            else:
                raise FormatError("%s: chunk ref of no kind" % path)
            refs.append(ref)
        out["arrays"][node] = refs
    return out


def unpack_location(packed, dictionary, algorithm):
    """A compressed_location as text (zstd with the manifest dictionary)."""
    if algorithm == 0:
        return packed.decode("utf-8")
    if zstandard is None:
        raise FormatError("compressed locations need python3-zstandard")
    d = zstandard.ZstdCompressionDict(dictionary or b"")
    return zstandard.ZstdDecompressor(dict_data=d).decompressobj() \
        .decompress(packed).decode("utf-8")


def chunk_sha(chunks_dir, ref):
    """sha256 of a native chunk's bytes, or a note why there is none."""
    path = os.path.join(chunks_dir, ref["chunk_id"])
    try:
        with open(path, "rb") as f:
            f.seek(ref["offset"])
            data = f.read(ref["length"])
    except OSError:
        return "missing chunk file"
    if len(data) != ref["length"]:
        return "short chunk file"
    return hashlib.sha256(data).hexdigest()


def decode_repo(path):
    """The spec 2 repo info file as a dict."""
    body, writer, version = read_file(path, 2, FILE_REPO)
    if version != 2:
        raise FormatError("%s: a repo file of spec version %d" %
                          (path, version))
    t = FbBuf(body, path).root()
    snaps = []
    for s in t.required(t.tables(4), "Repo.snapshots"):
        snaps.append({
            "id": b32_encode(s.required(s.struct(0, 12), "SnapshotInfo.id")),
            "parent_offset": s.scalar(1, "i"),
            "flushed_at": s.scalar(2, "Q"),
            "message": s.required(s.string(3), "SnapshotInfo.message"),
            "metadata": decode_metadata(s.tables(4), 2),
        })
    for i, s in enumerate(snaps):
        p = s.pop("parent_offset")
        if p != -1 and not 0 <= p < len(snaps):
            raise FormatError("%s: parent_offset %d out of range" % (path, p))
        s["parent"] = None if p == -1 else snaps[p]["id"]

    def refs(slot, name):
        """The Ref vector at slot as {name: snapshot id}."""
        out = {}
        for r in t.required(t.tables(slot), name):
            i = r.scalar(1, "I")
            if i >= len(snaps):
                raise FormatError("%s: snapshot_index %d" % (path, i))
            out[r.required(r.string(0), "Ref.name")] = snaps[i]["id"]
        return out
    repo = {"writer": writer, "spec_version": t.scalar(0, "B"),
            "branches": refs(2, "Repo.branches"),
            "tags": refs(1, "Repo.tags"),
            "deleted_tags": t.required(t.strings(3), "Repo.deleted_tags"),
            "snapshots": snaps}
    status = t.required(t.table(5), "Repo.status")
    repo["status"] = {"availability": status.scalar(0, "B"),
                      "set_at": status.scalar(1, "Q")}
    updates = []
    for u in t.required(t.tables(7), "Repo.latest_updates"):
        kind = u.scalar(0, "B")
        updates.append(UPDATE_NAMES[kind] if kind < len(UPDATE_NAMES)
                       else kind)
    repo["latest_updates"] = updates
    repo["repo_before_updates"] = t.string(8)
    config = t.bytes(9)
    if config is not None:
        from flatbuffers import flexbuffers
        repo["config"] = flexbuffers.Loads(config)
    return repo


def read_refs_v1(root):
    """Spec 1 refs: ({branch: id}, {tag: id}, {deleted tag: id})."""
    branches, tags, deleted = {}, {}, {}
    refs = os.path.join(root, "refs")
    for name in sorted(os.listdir(refs)):
        kind, _, ref = name.partition(".")
        rj = os.path.join(refs, name, "ref.json")
        if kind not in ("branch", "tag") or not os.path.exists(rj):
            continue
        with open(rj) as f:
            target = json.load(f)["snapshot"]
        b32_decode(target, 12)
        if kind == "branch":
            branches[ref] = target
        elif os.path.exists(rj + ".deleted"):
            deleted[ref] = target
        else:
            tags[ref] = target
    return branches, tags, deleted


def detect_spec(root):
    """1 or 2, from the files present."""
    if os.path.isfile(os.path.join(root, "repo")):
        return 2
    if os.path.isdir(os.path.join(root, "refs")):
        return 1
    raise FormatError("%s: neither repo nor refs/: not Icechunk" % root)


def ancestry(snapshots, start):
    """Snapshot ids from start back to the root, newest first."""
    out = []
    seen = set()
    while start is not None:
        if start in seen:
            raise FormatError("a cycle in the history at %s" % start)
        seen.add(start)
        out.append(start)
        start = snapshots[start]["parent"]
    return out


def dump_repo(root, with_chunks=True, with_manifests=True):
    """The whole structure of a repository as a JSON-ready dict; native
    chunks get the sha256 of their bytes unless with_chunks is false,
    manifests are left out unless with_manifests."""
    spec = detect_spec(root)
    out = {"spec_version": spec}
    snapshots = {}
    if spec == 2:
        repo = decode_repo(os.path.join(root, "repo"))
        if repo["spec_version"] != 2:
            raise FormatError("repo says spec version %d" %
                              repo["spec_version"])
        out["branches"] = repo["branches"]
        out["tags"] = repo["tags"]
        out["deleted_tags"] = repo["deleted_tags"]
        out["config"] = repo.get("config")
        out["repo_status"] = repo["status"]
        out["latest_updates"] = repo["latest_updates"]
        for s in repo["snapshots"]:
            snapshots[s["id"]] = dict(s)
    else:
        branches, tags, deleted = read_refs_v1(root)
        out["branches"], out["tags"] = branches, tags
        out["deleted_tags"] = sorted(deleted)
        cfg = os.path.join(root, "config.yaml")
        if os.path.exists(cfg):
            with open(cfg, encoding="utf-8") as f:
                out["config_yaml"] = f.read()
        todo = list(branches.values()) + list(tags.values()) + \
            list(deleted.values())
        while todo:
            sid = todo.pop()
            if sid in snapshots or sid is None:
                continue
            snapshots[sid] = {"id": sid}
            s = decode_snapshot(os.path.join(root, "snapshots", sid), 1)
            snapshots[sid]["parent"] = s["parent_in_file"]
            todo.append(s["parent_in_file"])
    manifests = {}
    chunks_dir = os.path.join(root, "chunks") if with_chunks else None
    for sid in sorted(snapshots):
        s = decode_snapshot(os.path.join(root, "snapshots", sid), spec)
        if s["id"] != sid:
            raise FormatError("snapshot %s holds id %s" % (sid, s["id"]))
        info = snapshots[sid]
        if spec == 2:
            if s["spec_version"] == 2 and s["parent_in_file"] is not None:
                raise FormatError("spec 2 snapshot %s has parent_id" % sid)
            if s["message"] != info["message"]:
                raise FormatError("snapshot %s: message differs from repo"
                                  % sid)
        info.update({k: s[k] for k in ("message", "flushed_at", "time",
                                        "metadata", "manifest_files",
                                        "nodes", "writer",
                                        "spec_version")})
        for f in s["manifest_files"]:
            if with_manifests and f["id"] not in manifests:
                m = decode_manifest(os.path.join(root, "manifests", f["id"]),
                                    spec, chunks_dir)
                if m["id"] != f["id"]:
                    raise FormatError("manifest %s holds id %s" %
                                      (f["id"], m["id"]))
                manifests[f["id"]] = m
    for sid, info in snapshots.items():
        info["time"] = iso_time(info["flushed_at"])
    out["snapshots"] = [snapshots[k] for k in sorted(snapshots)]
    log = {}
    for kind, prefix in (("branches", "branch"), ("tags", "tag")):
        for name, sid in out[kind].items():
            if sid not in snapshots:
                raise FormatError("%s %s: unknown snapshot %s" %
                                  (kind, name, sid))
            log["%s.%s" % (prefix, name)] = \
                [snapshots[i]["message"] for i in ancestry(snapshots, sid)]
    out["log"] = log
    out["manifests"] = manifests
    return out



# ---------------------------------------------------------------- building


class FbBuilder:
    """flatbuffers.Builder with the few helpers the Icechunk tables need."""

    def __init__(self):
        """A fresh builder."""
        import flatbuffers
        self.b = flatbuffers.Builder(1024)

    def raw(self, data):
        """Prepends bytes already prepared for (aligned by the caller)."""
        b = self.b
        b.head = b.head - len(data)
        b.Bytes[b.head:b.head + len(data)] = data

    def string(self, text):
        """A string, created before the table that holds it."""
        return self.b.CreateString(text)

    def byte_vector(self, data):
        """A [ubyte] vector."""
        return self.b.CreateByteVector(bytes(data))

    def offsets(self, offs):
        """A vector of offsets (tables or strings), in the given order."""
        self.b.StartVector(4, len(offs), 4)
        for o in reversed(offs):
            self.b.PrependUOffsetTRelative(o)
        return self.b.EndVector()

    def structs(self, raws, size, align):
        """A vector of structs given as their bytes."""
        self.b.StartVector(size, len(raws), align)
        for r in reversed(raws):
            self.raw(r)
        return self.b.EndVector()

    def scalars(self, fmt, values):
        """A vector of scalars of one struct format letter."""
        size = struct.calcsize("<" + fmt)
        self.b.StartVector(size, len(values), size)
        self.raw(struct.pack("<%d%s" % (len(values), fmt), *values))
        return self.b.EndVector()

    def struct_slot(self, slot, data, align):
        """An inline struct field of the table being built."""
        self.b.Prep(align, len(data))
        self.raw(data)
        self.b.PrependStructSlot(slot, self.b.Offset(), 0)

    def table(self, nslots, fields):
        """A table from (kind, slot, value) triples written in that order:
        kind is 'off' (offset), 'struct' (bytes, align), or a struct
        format letter for a scalar; a scalar 0 or None is left out."""
        b = self.b
        b.StartObject(nslots)
        for kind, slot, value in fields:
            if value is None:
                continue
            if kind == "off":
                b.PrependUOffsetTRelativeSlot(slot, value, 0)
            elif kind == "struct":
                self.struct_slot(slot, value[0], value[1])
            else:
                fn = {"B": b.PrependUint8Slot, "H": b.PrependUint16Slot,
                      "I": b.PrependUint32Slot, "i": b.PrependInt32Slot,
                      "Q": b.PrependUint64Slot}[kind]
                fn(slot, value, 0)
        return b.EndObject()

    def finish(self, root):
        """The finished buffer with root as its root table."""
        self.b.Finish(root)
        return bytes(self.b.Output())


def build_metadata(fb, metadata, spec):
    """MetadataItem offsets sorted by name (FlexBuffers in spec 2)."""
    from flatbuffers import flexbuffers
    out = []
    for name in sorted(metadata or {}, key=lambda k: k.encode()):
        value = metadata[name]
        if isinstance(value, dict) and set(value) == {"hex"}:
            raw = bytes.fromhex(value["hex"])
        elif spec == 2:
            raw = bytes(flexbuffers.Dumps(value))
        else:
            raw = msgpack_pack(value)
        n, v = fb.string(name), fb.byte_vector(raw)
        out.append(fb.table(2, [("off", 0, n), ("off", 1, v)]))
    return out


def chunk_grid(zarr):
    """(shape, chunk shape) of an array from its zarr.json."""
    shape = zarr["shape"]
    grid = zarr.get("chunk_grid", {})
    if grid.get("name") != "regular":
        raise ValueError("only regular chunk grids: %r" % grid)
    return shape, grid["configuration"]["chunk_shape"]


class RepoWriter:
    """Writes one repository from a description (see README.md)."""

    def __init__(self, out, spec, compress=True):
        """A writer into the directory out."""
        self.out = out
        self.spec = spec
        self.compress = compress
        self.chunk_files = {}     # label -> [bytearray, {sha: offset}, id]
        self.manifests = {}       # content key -> (id, size, count)
        self.counter = 0
        self.extra_refs = {}      # hostile: kind -> [(name, raw index)]
        self.only_files = None    # hostile: labels whose snapshot files
        #                           are written (None: all)

    def fresh_id(self, kind, n=12):
        """A new id, derived from a counter: the same on every run."""
        self.counter += 1
        return derive_id(n, kind, self.counter, self.out)

    def native(self, data, label):
        """(chunk id, offset) of chunk bytes placed in the labelled file."""
        sha = hashlib.sha256(data).hexdigest()
        if label is None:
            label = "sha:" + sha
        entry = self.chunk_files.get(label)
        if entry is None:
            entry = [bytearray(), {}, self.fresh_id("chunk")]
            self.chunk_files[label] = entry
        if sha not in entry[1]:
            entry[1][sha] = len(entry[0])
            entry[0] += data
        return entry[2], entry[1][sha]

    def chunk_ref(self, fb, c, packer=None):
        """One ChunkRef table; virtual locations go through packer (a zstd
        compressor with the manifest's dictionary) when there is one."""
        index = fb.scalars("I", c["index"])
        if "inline" in c:
            data = fb.byte_vector(bytes.fromhex(c["inline"]))
            return fb.table(10, [("off", 0, index), ("off", 1, data)])
        if "native" in c:
            data = bytes.fromhex(c["native"])
            cid, off = self.native(data, c.get("file"))
            return fb.table(10, [("Q", 2, off), ("Q", 3, len(data)),
                                 ("off", 0, index),
                                 ("struct", 4, (cid, 1))])
        v = c["virtual"]
        loc = packed = None
        if packer is None:
            loc = fb.string(v["location"])
        else:
            packed = fb.byte_vector(packer.compress(v["location"].encode()))
        etag = fb.string(v["etag"]) if "etag" in v else None
        return fb.table(10, [("Q", 2, v.get("offset", 0)),
                             ("Q", 3, v["length"]), ("off", 0, index),
                             ("off", 5, loc), ("off", 6, etag),
                             ("I", 7, v.get("last_modified")),
                             ("off", 8, packed)])

    def location_dictionary(self, chunks):
        """(dictionary bytes, compressor) trained on the manifest's virtual
        locations, in zstd's standard dictionary format."""
        if self.spec != 2:
            raise ValueError("compressed locations need spec 2")
        if zstandard is None:
            raise ValueError("compressed locations need python3-zstandard")
        locs = [c["virtual"]["location"].encode() for c in chunks
                if "virtual" in c]
        if not locs:
            raise ValueError("compress_locations without a virtual chunk")
        # training wants many samples: repeat the few a test has
        samples = locs * max(1, 400 // len(locs))
        d = zstandard.train_dictionary(4096, samples)
        return d.as_bytes(), zstandard.ZstdCompressor(dict_data=d)

    def manifest(self, node_id, chunks, compress_locations=False):
        """(id, size, count) of a manifest holding one array's chunks;
        the same content written twice is one file."""
        chunks = sorted(chunks, key=lambda c: c["index"])
        key = json.dumps([node_id.hex(), chunks, compress_locations],
                         sort_keys=True)
        if key in self.manifests:
            return self.manifests[key]
        mid = self.fresh_id("manifest")
        fb = FbBuilder()
        dictionary = packer = None
        if compress_locations:
            dictionary, packer = self.location_dictionary(chunks)
        refs = fb.offsets([self.chunk_ref(fb, c, packer) for c in chunks])
        am = fb.table(3, [("off", 1, refs), ("struct", 0, (node_id, 1))])
        arrays = fb.offsets([am])
        # compression_algorithm 1 (zstd) is the schema default: with a
        # dictionary it is written all the same, for readers that do not
        # know the default
        fields = [("off", 1, arrays), ("struct", 0, (mid, 1))]
        if dictionary is not None:
            fields += [("off", 2, fb.byte_vector(dictionary)), ("B", 3, 1)]
        root = fb.table(5, fields)
        size = write_file(os.path.join(self.out, "manifests", b32_encode(mid)),
                          self.spec, FILE_MANIFEST, fb.finish(root),
                          self.compress)
        self.manifests[key] = (mid, size, len(chunks))
        return self.manifests[key]

    def array_manifests(self, node, node_id, ndim):
        """[(manifest id, extents, size, count)] of an array node."""
        if "_prebuilt" in node:
            return node["_prebuilt"]
        groups = node.get("manifests")
        if groups is None:
            groups = [{"chunks": node.get("chunks", [])}]
        out = []
        for g in groups:
            chunks = g.get("chunks", [])
            for c in chunks:
                if len(c["index"]) != ndim:
                    raise ValueError("%s: index %r" % (node["path"],
                                                       c["index"]))
            if not chunks:
                continue
            ext = g.get("extents")
            if ext is None:
                ext = [[min(c["index"][d] for c in chunks),
                        max(c["index"][d] for c in chunks) + 1]
                       for d in range(ndim)]
            for c in chunks:
                if not all(e[0] <= i < e[1] for i, e in zip(c["index"], ext)):
                    raise ValueError("%s: chunk %r outside extents %r" %
                                     (node["path"], c["index"], ext))
            mid, size, count = self.manifest(
                node_id, chunks, g.get("compress_locations", False))
            out.append((mid, ext, size, count))
        return out

    def node(self, fb, node, files):
        """One NodeSnapshot table; manifests it uses are added to files."""
        path = node["path"]
        if "node_id" in node:
            node_id = b32_decode(node["node_id"], 8)
        else:
            node_id = derive_id(8, "node", path)
        if "zarr_json" in node:
            user_data = node["zarr_json"].encode("utf-8")
            zarr = json.loads(node["zarr_json"])
        else:
            zarr = node["zarr"]
            user_data = json.dumps(zarr, separators=(",", ":"),
                                   ensure_ascii=False).encode("utf-8")
        if node["type"] == "group":
            data = fb.table(0, [])
            kind = UNION_GROUP
        else:
            kind = UNION_ARRAY
            shape, chunk = chunk_grid(zarr)
            mans = self.array_manifests(node, node_id, len(shape))
            refs = []
            for mid, ext, size, count in mans:
                files[mid] = (size, count)
                e = fb.structs([struct.pack("<II", *x) for x in ext], 8, 4)
                refs.append(fb.table(2, [("off", 1, e),
                                         ("struct", 0, (mid, 1))]))
            refs = fb.offsets(refs)
            names = node.get("dimension_names", zarr.get("dimension_names"))
            if names is not None:
                names = fb.offsets([fb.table(1, [("off", 0, None if n is None
                                                  else fb.string(n))])
                                    for n in names])
            if self.spec == 1:
                v1 = fb.structs([struct.pack("<QQ", s, c)
                                 for s, c in zip(shape, chunk)], 16, 8)
                v2 = None
            else:
                v1 = fb.structs([], 16, 8)
                v2 = fb.offsets([fb.table(2, [("Q", 0, s),
                                              ("I", 1, -(-s // c))])
                                 for s, c in zip(shape, chunk)])
            data = fb.table(4, [("off", 0, v1), ("off", 1, names),
                                ("off", 2, refs), ("off", 3, v2)])
        p = fb.string(path)
        ud = fb.byte_vector(user_data)
        return fb.table(6, [("off", 1, p), ("off", 2, ud), ("B", 3, kind),
                            ("off", 4, data),
                            ("struct", 0, (node_id, 1))])

    def snapshot(self, desc, sid, parent):
        """Writes one snapshot file."""
        fb = FbBuilder()
        files = {}
        nodes = sorted(desc.get("nodes", []),
                       key=lambda n: n["path"].encode("utf-8"))
        offs = [self.node(fb, n, files) for n in nodes]
        nodes_vec = fb.offsets(offs)
        msg = fb.string(desc.get("message", ""))
        meta = fb.offsets(build_metadata(fb, desc.get("metadata"),
                                         self.spec))
        ids = sorted(files)
        if self.spec == 1:
            v1 = fb.structs([mid + b"\0" * 4 +
                             struct.pack("<QI", files[mid][0],
                                         files[mid][1]) + b"\0" * 4
                             for mid in ids], 32, 8)
            v2 = None
        else:
            v1 = fb.structs([], 32, 8)
            v2 = fb.offsets([fb.table(4, [("Q", 1, files[m][0]),
                                          ("I", 2, files[m][1]),
                                          ("struct", 0, (m, 1))])
                             for m in ids])
        root = fb.table(9, [("Q", 3, desc["_time"]), ("off", 2, nodes_vec),
                            ("off", 4, msg), ("off", 5, meta),
                            ("off", 6, v1), ("off", 7, v2),
                            ("struct", 0, (sid, 1)),
                            ("struct", 1, (parent, 1)
                             if self.spec == 1 and parent else None)])
        write_file(os.path.join(self.out, "snapshots", b32_encode(sid)),
                   self.spec, FILE_SNAPSHOT, fb.finish(root), self.compress)

    def write(self, desc):
        """Writes the whole repository described by desc."""
        snaps = desc["snapshots"]
        ids = {}
        for i, s in enumerate(snaps):
            label = s["id"]
            try:
                ids[label] = b32_decode(label, 12)
            except FormatError:
                if s.get("parent") is None:
                    ids[label] = b32_decode(FIRST_SNAPSHOT, 12)
                else:
                    ids[label] = derive_id(12, "snapshot", label)
            t = s.get("time", 1700000000000000 + i * 1000000)
            s["_time"] = parse_time(t)
        for s in snaps:
            parent = s.get("parent")
            if parent is not None and parent not in ids:
                raise ValueError("snapshot %s: unknown parent %s" %
                                 (s["id"], parent))
            if self.only_files is None or s["id"] in self.only_files:
                self.snapshot(s, ids[s["id"]],
                              None if parent is None else ids[parent])
        for label, (data, _, cid) in self.chunk_files.items():
            os.makedirs(os.path.join(self.out, "chunks"), exist_ok=True)
            with open(os.path.join(self.out, "chunks", b32_encode(cid)),
                      "wb") as f:
                f.write(data)
        refs = {}
        for kind in ("branches", "tags", "deleted_tags"):
            refs[kind] = {}
            for name, label in desc.get(kind, {}).items():
                if label is None and kind == "deleted_tags":
                    label = desc["branches"]["main"]
                if label not in ids:
                    raise ValueError("%s %s: unknown snapshot %s" %
                                     (kind, name, label))
                refs[kind][name] = ids[label]
        if "main" not in refs["branches"]:
            raise ValueError("a repository needs branch main")
        if self.spec == 1:
            self.refs_v1(refs, desc)
        else:
            self.repo_v2(refs, desc, snaps, ids)

    def refs_v1(self, refs, desc):
        """Spec 1 ref.json files, tombstones and config.yaml."""
        def put(kind, name, sid, deleted=False):
            """Writes refs/KIND.NAME/ref.json, and its tombstone if deleted."""
            d = os.path.join(self.out, "refs", "%s.%s" % (kind, name))
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "ref.json"), "w") as f:
                f.write(json.dumps({"snapshot": b32_encode(sid)},
                                   separators=(",", ":")))
            if deleted:
                open(os.path.join(d, "ref.json.deleted"), "w").close()
        for name, sid in refs["branches"].items():
            put("branch", name, sid)
        for name, sid in refs["tags"].items():
            put("tag", name, sid)
        for name, sid in refs["deleted_tags"].items():
            put("tag", name, sid, True)
        if "config_yaml" in desc:
            with open(os.path.join(self.out, "config.yaml"), "w",
                      encoding="utf-8") as f:
                f.write(desc["config_yaml"])

    def repo_v2(self, refs, desc, snaps, ids):
        """The spec 2 repo info file."""
        from flatbuffers import flexbuffers
        order = sorted(ids.values())
        index = {sid: i for i, sid in enumerate(order)}
        by_id = {ids[s["id"]]: s for s in snaps}
        fb = FbBuilder()

        def ref_vec(named, kind):
            """A Ref vector sorted by name, then the hostile raw entries
            of that kind (any name, any snapshot index)."""
            items = sorted(named.items(), key=lambda kv: kv[0].encode())
            items = [(n, index[sid]) for n, sid in items]
            items += self.extra_refs.get(kind, [])
            return fb.offsets([fb.table(2, [("off", 0, fb.string(n)),
                                            ("I", 1, i)])
                               for n, i in items])
        infos = []
        for sid in order:
            s = by_id[sid]
            parent = s.get("parent")
            meta = build_metadata(fb, s.get("metadata"), 2)
            meta = fb.offsets(meta) if meta else None
            msg = fb.string(s.get("message", ""))
            infos.append(fb.table(6, [
                ("Q", 2, s["_time"]), ("off", 3, msg), ("off", 4, meta),
                ("i", 1, -1 if parent is None else index[ids[parent]]),
                ("struct", 0, (sid, 1))]))
        snapshots = fb.offsets(infos)
        tags = ref_vec(refs["tags"], "tags")
        branches = ref_vec(refs["branches"], "branches")
        deleted = fb.offsets([fb.string(n) for n in
                              sorted(refs["deleted_tags"],
                                     key=lambda k: k.encode())])
        last = max(s["_time"] for s in snaps)
        status = fb.table(3, [("Q", 1, last), ("B", 0, 0)])
        updates = self.updates_v2(fb, refs, snaps, ids, last)
        config = desc.get("config")
        if config is not None:
            config = fb.byte_vector(bytes(flexbuffers.Dumps(config)))
        root = fb.table(13, [("off", 1, tags), ("off", 2, branches),
                             ("off", 3, deleted), ("off", 4, snapshots),
                             ("off", 5, status), ("off", 7, updates),
                             ("off", 9, config), ("B", 0, 2)])
        write_file(os.path.join(self.out, "repo"), 2, FILE_REPO,
                   fb.finish(root), self.compress)

    def updates_v2(self, fb, refs, snaps, ids, last):
        """An ops log, newest first: commits, then ref changes."""
        entries = []
        for s in sorted(snaps, key=lambda s: s["_time"]):
            sid = ids[s["id"]]
            if s.get("parent") is None:
                entries.append((s["_time"], UPD_REPO_INITIALIZED, []))
                continue
            branch = next((n for n, b in sorted(refs["branches"].items())
                           if b == sid), "main")
            entries.append((s["_time"], UPD_NEW_COMMIT,
                            [("off", 0, branch), ("struct", 1, (sid, 1))]))
        for name in sorted(refs["branches"]):
            if name != "main":
                entries.append((last, UPD_BRANCH_CREATED,
                                [("off", 0, name)]))
        for name in sorted(refs["tags"]) + sorted(refs["deleted_tags"]):
            entries.append((last, UPD_TAG_CREATED, [("off", 0, name)]))
        for name, sid in sorted(refs["deleted_tags"].items()):
            entries.append((last, UPD_TAG_DELETED,
                            [("off", 0, name), ("struct", 1, (sid, 1))]))
        offs = []
        for when, kind, fields in reversed(entries):
            fields = [(k, slot, fb.string(v) if k == "off" else v)
                      for k, slot, v in fields]
            body = fb.table(3, fields)
            offs.append(fb.table(4, [("Q", 2, when), ("off", 1, body),
                                     ("B", 0, kind)]))
        return fb.offsets(offs)




# ---------------------------------------------------------------- scale


def scale_manifest(mid, node_id, first, count, chunk_id, nbytes):
    """A manifest flatbuffer of count native refs to one chunk file, laid
    out with numpy: 1-D indexes first..first+count-1, chunk k of the file
    at offset k * nbytes. Field positions follow manifest.fbs; every
    ChunkRef shares one vtable."""
    import numpy as np
    rec = 48                        # table (36) + index vector (4 + 4) + pad
    vt_ref = 68 + 4 * count         # after the refs vector
    first_rec = (vt_ref + 16 + 7) // 8 * 8
    size = first_rec + rec * count
    buf = np.zeros(size, dtype=np.uint8)

    def put(pos, fmt, *values):
        """Writes packed scalars at pos."""
        buf[pos:pos + struct.calcsize("<" + fmt)] = np.frombuffer(
            struct.pack("<" + fmt, *values), dtype=np.uint8)
    put(0, "I", 12)                         # root -> Manifest at 12
    put(4, "HHHH", 8, 20, 8, 4)             # Manifest vtable: id, arrays
    put(12, "iI", 12 - 4, 32 - 16)          # soffset, arrays -> 32
    buf[20:32] = np.frombuffer(mid, dtype=np.uint8)
    put(32, "II", 1, 48 - 36)               # arrays: [ArrayManifest at 48]
    put(40, "HHHH", 8, 16, 8, 4)            # ArrayManifest vtable
    put(48, "iI", 48 - 40, 64 - 52)         # soffset, refs -> 64
    buf[56:64] = np.frombuffer(node_id, dtype=np.uint8)
    put(64, "I", count)
    recs = first_rec + rec * np.arange(count, dtype=np.int64)
    slots = 68 + 4 * np.arange(count, dtype=np.int64)
    buf[68:68 + 4 * count] = (recs - slots).astype("<u4").view(np.uint8)
    # ChunkRef vtable: index@4, inline absent, offset@8, length@16,
    # chunk_id@24; table size 36
    put(vt_ref, "HHHHHHH", 14, 36, 4, 0, 8, 16, 24)
    dt = np.dtype({"names": ["so", "io", "off", "len", "cid", "n", "i"],
                   "formats": ["<i4", "<u4", "<u8", "<u8", ("u1", 12),
                               "<u4", "<u4"],
                   "offsets": [0, 4, 8, 16, 24, 36, 40], "itemsize": rec})
    r = buf[first_rec:].view(dt)
    r["so"] = recs - vt_ref
    r["io"] = 32                            # index vector at +36
    r["off"] = nbytes * np.arange(count, dtype=np.uint64)
    r["len"] = nbytes
    r["cid"] = np.frombuffer(chunk_id, dtype=np.uint8)
    r["n"] = 1
    r["i"] = np.arange(first, first + count, dtype=np.uint32)
    return buf.tobytes()


def write_scale(out, spec, nrefs, nmanifests, nsnapshots, elems,
                compress=True):
    """A repository of nrefs native chunk refs of one 1-D int32 array
    /scale/values (element i = i, chunks of elems elements) in nmanifests
    manifests with contiguous extents, one chunk file per manifest, and a
    linear history of nsnapshots snapshots on main. Returns a summary:
    the array, the counts, the ids of main and of the tags."""
    import numpy as np
    if nsnapshots < 2 or nmanifests < 1 or nrefs < nmanifests:
        raise ValueError("scale needs 2+ snapshots and refs >= manifests")
    w = RepoWriter(out, spec, compress)
    node_id = derive_id(8, "node", "/scale/values")
    nbytes = elems * 4
    mans = []
    for m in range(nmanifests):
        first = nrefs * m // nmanifests
        count = nrefs * (m + 1) // nmanifests - first
        cid = w.fresh_id("chunk")
        data = np.arange(first * elems, (first + count) * elems,
                         dtype="<i4")
        os.makedirs(os.path.join(out, "chunks"), exist_ok=True)
        with open(os.path.join(out, "chunks", b32_encode(cid)), "wb") as f:
            f.write(data.tobytes())
        mid = w.fresh_id("manifest")
        flat = scale_manifest(mid, node_id, first, count, cid, nbytes)
        size = write_file(os.path.join(out, "manifests", b32_encode(mid)),
                          spec, FILE_MANIFEST, flat, compress)
        mans.append((mid, [[first, first + count]], size, count))
    group = {"zarr_format": 3, "node_type": "group", "attributes": {}}
    snaps = [{"id": FIRST_SNAPSHOT, "parent": None,
              "message": "Repository initialized", "nodes": [],
              "metadata": {"__icechunk": {"is_root": True}} if spec == 2
              else {"__root": True}}]
    for k in range(1, nsnapshots):
        array = {"zarr_format": 3, "node_type": "array",
                 "shape": [nrefs * elems], "data_type": "int32",
                 "chunk_grid": {"name": "regular",
                                "configuration": {"chunk_shape": [elems]}},
                 "chunk_key_encoding": {"name": "default",
                                        "configuration": {"separator": "/"}},
                 "fill_value": 0,
                 "codecs": [{"name": "bytes",
                             "configuration": {"endian": "little"}}],
                 "attributes": {"commit": k}}
        snaps.append({
            "id": "commit %d" % k, "parent": snaps[-1]["id"],
            "message": "commit %d" % k,
            "nodes": [{"path": "/", "type": "group", "zarr": group},
                      {"path": "/scale", "type": "group", "zarr": group},
                      {"path": "/scale/values", "type": "array",
                       "zarr": array, "_prebuilt": mans}]})
    desc = {"snapshots": snaps, "branches": {"main": snaps[-1]["id"]},
            "tags": {"middle": snaps[nsnapshots // 2]["id"],
                     "first": snaps[1]["id"]}}
    w.write(desc)
    ids = normal_desc(desc, spec)
    return {"array": "/scale/values", "refs": nrefs,
            "manifests": nmanifests, "snapshots": nsnapshots,
            "main": ids["branches"]["main"], "tags": ids["tags"]}


# ---------------------------------------------------------------- hostile
# Repositories no honest writer makes, for the reader's hardening tests
# (tests/integration/mount_icechunk_hostile.sh): each case is a
# description written by RepoWriter, then bent where the spec allows no
# description to go.

HOSTILE_CASES = ("cycle", "long", "badrefs")


def hostile_tree(k):
    """A root group and a 1-D int8 array /a of 2 elements, both k (one
    inline chunk): a tree every hostile snapshot can be read at."""
    group = {"zarr_format": 3, "node_type": "group", "attributes": {}}
    array = {"zarr_format": 3, "node_type": "array", "shape": [2],
             "data_type": "int8",
             "chunk_grid": {"name": "regular",
                            "configuration": {"chunk_shape": [2]}},
             "chunk_key_encoding": {"name": "default",
                                    "configuration": {"separator": "/"}},
             "fill_value": 0,
             "codecs": [{"name": "bytes", "configuration": {}}],
             "attributes": {}}
    return [{"path": "/", "type": "group", "zarr": group},
            {"path": "/a", "type": "array", "zarr": array,
             "chunks": [{"index": [0], "inline": "%02x%02x" % (k, k)}]}]


def hostile_message(text, nbytes):
    """text padded with '.' to nbytes bytes (when longer than text)."""
    return text + "." * max(0, nbytes - len(text))


def hostile_cycle(n, nbytes):
    """main is a lasso: tip -> cycle 1 -> ... -> cycle n -> cycle 1 (n = 1:
    cycle 1 is its own parent); tag ok is an honest two-snapshot chain."""
    snaps = [{"id": "init", "parent": None,
              "message": "Repository initialized", "nodes": []},
             {"id": "ok", "parent": "init", "message": "ok",
              "nodes": hostile_tree(2)},
             {"id": "tip", "parent": "c1",
              "message": hostile_message("tip", nbytes),
              "nodes": hostile_tree(1)}]
    for k in range(1, n + 1):
        snaps.append({"id": "c%d" % k,
                      "parent": "c%d" % (k + 1 if k < n else 1),
                      "message": hostile_message("cycle %d" % k, nbytes),
                      "nodes": hostile_tree(3)})
    return {"snapshots": snaps, "branches": {"main": "tip"},
            "tags": {"ok": "ok"}}


def hostile_long(n, nbytes):
    """A linear history of n snapshots on main, messages of nbytes bytes;
    only the tip holds the array."""
    snaps = [{"id": "init", "parent": None,
              "message": hostile_message("Repository initialized", nbytes),
              "nodes": []}]
    for k in range(1, n):
        snaps.append({"id": "s%d" % k, "parent": snaps[-1]["id"],
                      "message": hostile_message("commit %d" % k, nbytes),
                      "nodes": hostile_tree(1) if k == n - 1 else []})
    return {"snapshots": snaps, "branches": {"main": snaps[-1]["id"]}}


def hostile_badrefs_v1(out, sids):
    """Spec 1 refs no reader can use, beside the good ones: ref.json empty,
    not JSON, naming a snapshot with no file, an id that is no id; refs
    named '', '.' and '..' (directories tag., tag.. and tag...)."""
    missing = b32_encode(derive_id(12, "no such snapshot"))
    bad = {"tag.empty": "", "tag.garbage": "garbage{",
           "tag.missing": json.dumps({"snapshot": missing}),
           "tag.badid": json.dumps({"snapshot": "not an id"}),
           "branch.broken": "[1, 2",
           "branch.": json.dumps({"snapshot": sids["good"]}),
           "tag..": json.dumps({"snapshot": sids["good"]}),
           "tag...": json.dumps({"snapshot": sids["good"]})}
    for d, text in bad.items():
        os.makedirs(os.path.join(out, "refs", d), exist_ok=True)
        with open(os.path.join(out, "refs", d, "ref.json"), "w") as f:
            f.write(text)


def hostile_badrefs():
    """main and tag good, honest; the rest is added by write_hostile."""
    return {"snapshots": [
        {"id": "init", "parent": None, "message": "Repository initialized",
         "nodes": []},
        {"id": "main", "parent": "init", "message": "main",
         "nodes": hostile_tree(1)},
        {"id": "good", "parent": "main", "message": "good",
         "nodes": hostile_tree(2)}],
        "branches": {"main": "main", "feature": "good"},
        "tags": {"good": "good"}}


def hostile_ids(desc):
    """{label: raw 12-byte id} as RepoWriter.write gives them."""
    return {s["id"]: b32_decode(FIRST_SNAPSHOT, 12)
            if s.get("parent") is None else
            derive_id(12, "snapshot", s["id"]) for s in desc["snapshots"]}


def write_hostile(out, case, spec, n, nbytes):
    """Writes hostile repository case into out; returns a summary: the
    case, the snapshot ids by label, the refs a reader must skip."""
    w = RepoWriter(out, spec)
    skip = []
    if case == "cycle":
        desc = hostile_cycle(n, nbytes)
    elif case == "long":
        desc = hostile_long(n, nbytes)
        if spec == 2:   # the history is the repo file's: one tree is read
            w.only_files = {desc["branches"]["main"]}
    else:
        desc = hostile_badrefs()
    ids = hostile_ids(desc)
    if case == "badrefs" and spec == 2:
        # names no file system can hold, one naming no snapshot, a name
        # listed twice (the second pointing elsewhere)
        good = sorted(ids.values()).index(ids["good"])
        odd = ["", "sl/ash", "../../etc", "nul\0byte", ".", ".."]
        w.extra_refs["tags"] = [(name, good) for name in odd]
        w.extra_refs["tags"] += [("range", len(ids) + 96), ("good", 0)]
        w.extra_refs["branches"] = [("", good), ("..", good)]
        skip = ["tag " + name for name in odd]
        skip += ["tag range", "tag good (twice)", "branch ", "branch .."]
    elif case == "badrefs":
        # tag missing is well formed: what it names is found missing
        # only when it is used
        skip = ["tag empty", "tag garbage", "tag badid", "branch broken",
                "branch ", "tag .", "tag .."]
    w.write(desc)
    labels = {k: b32_encode(v) for k, v in ids.items()
              if case != "long" or k in ("init", desc["branches"]["main"])}
    if case == "badrefs" and spec == 1:
        hostile_badrefs_v1(out, labels)
    return {"case": case, "spec": spec, "snapshots": labels, "skipped": skip}


# ---------------------------------------------------------------- describe


def describe_repo(root):
    """A repository as a description that write reproduces."""
    d = dump_repo(root, with_chunks=False)
    spec = d["spec_version"]
    chunks_dir = os.path.join(root, "chunks")
    desc = {"spec": spec, "snapshots": []}
    for s in d["snapshots"]:
        raw = decode_snapshot(os.path.join(root, "snapshots", s["id"]), spec,
                              keep_text=True)
        nodes = []
        for n in raw["nodes"]:
            node = {"path": n["path"], "type": n["type"],
                    "node_id": n["node_id"], "zarr_json": n["user_data_text"]}
            if "dimension_names" in n:
                node["dimension_names"] = n["dimension_names"]
            if n["type"] == "array":
                node["manifests"] = []
                for m in n["manifests"]:
                    refs = d["manifests"][m["id"]]["arrays"].get(n["node_id"],
                                                                 [])
                    group = {"extents": m["extents"],
                             "chunks": [describe_chunk(chunks_dir, r)
                                        for r in refs]}
                    if any(r.get("location_compressed") for r in refs):
                        group["compress_locations"] = True
                    node["manifests"].append(group)
            nodes.append(node)
        desc["snapshots"].append({
            "id": s["id"], "parent": s["parent"], "message": s["message"],
            "time": s["time"], "metadata": s["metadata"], "nodes": nodes})
    desc["branches"] = d["branches"]
    desc["tags"] = d["tags"]
    if spec == 1:
        _, _, deleted = read_refs_v1(root)
        desc["deleted_tags"] = deleted
        if "config_yaml" in d:
            desc["config_yaml"] = d["config_yaml"]
    else:
        desc["deleted_tags"] = {n: None for n in d["deleted_tags"]}
        if d.get("config") is not None:
            desc["config"] = d["config"]
    return desc


def describe_chunk(chunks_dir, r):
    """One chunk ref as a description entry (native bytes read back)."""
    if r["type"] == "inline":
        return {"index": r["index"], "inline": r["data_hex"]}
    if r["type"] == "native":
        with open(os.path.join(chunks_dir, r["chunk_id"]), "rb") as f:
            f.seek(r["offset"])
            data = f.read(r["length"])
        return {"index": r["index"], "native": data.hex(),
                "file": r["chunk_id"]}
    v = {k: r[k] for k in ("location", "offset", "length", "etag",
                           "last_modified") if k in r}
    return {"index": r["index"], "virtual": v}



# ---------------------------------------------------------------- verify


def normal_desc(desc, spec):
    """A description in one canonical form: snapshot ids as written, times
    in microseconds, extents filled in, chunk files numbered by first use,
    so that a description and describe's output compare equal."""
    snaps = desc["snapshots"]
    ids = {}
    for i, s in enumerate(snaps):
        try:
            b32_decode(s["id"], 12)
            ids[s["id"]] = s["id"]
        except FormatError:
            ids[s["id"]] = FIRST_SNAPSHOT if s.get("parent") is None else \
                b32_encode(derive_id(12, "snapshot", s["id"]))
    files = {}
    out = {"snapshots": {}}
    for i, s in sorted(enumerate(snaps), key=lambda p: ids[p[1]["id"]]):
        nodes = []
        for n in sorted(s.get("nodes", []),
                        key=lambda n: n["path"].encode("utf-8")):
            zarr = json.loads(n["zarr_json"]) if "zarr_json" in n \
                else n["zarr"]
            node = {"path": n["path"], "type": n["type"], "user_data": zarr,
                    "node_id": n.get("node_id") or
                    b32_encode(derive_id(8, "node", n["path"]))}
            if n["type"] == "array":
                node["dimension_names"] = n.get("dimension_names",
                                                zarr.get("dimension_names"))
                groups = n.get("manifests")
                if groups is None:
                    groups = [{"chunks": n.get("chunks", [])}]
                mans = []
                for g in groups:
                    chunks = sorted(g.get("chunks", []),
                                    key=lambda c: c["index"])
                    if not chunks:
                        continue
                    ndim = len(chunks[0]["index"])
                    ext = g.get("extents") or \
                        [[min(c["index"][d] for c in chunks),
                          max(c["index"][d] for c in chunks) + 1]
                         for d in range(ndim)]
                    mans.append({"extents": ext, "chunks": chunks,
                                 "compress_locations":
                                 bool(g.get("compress_locations"))})
                mans.sort(key=lambda m: m["extents"])
                for m in mans:
                    norm = []
                    for c in m["chunks"]:
                        c = dict(c)
                        if "native" in c:
                            key = c.pop("file", None) or "sha:" + \
                                hashlib.sha256(bytes.fromhex(c["native"])) \
                                .hexdigest()
                            c["file"] = files.setdefault(key, len(files))
                        if "virtual" in c:
                            c["virtual"] = dict(c["virtual"])
                            c["virtual"].setdefault("offset", 0)
                        norm.append(c)
                    m["chunks"] = norm
                node["manifests"] = mans
            nodes.append(node)
        parent = s.get("parent")
        out["snapshots"][ids[s["id"]]] = {
            "parent": None if parent is None else ids[parent],
            "message": s.get("message", ""),
            "time": parse_time(s.get("time",
                                     1700000000000000 + i * 1000000)),
            "metadata": s.get("metadata") or {}, "nodes": nodes}
    out["branches"] = {k: ids[v] for k, v in desc.get("branches",
                                                       {}).items()}
    out["tags"] = {k: ids[v] for k, v in desc.get("tags", {}).items()}
    deleted = desc.get("deleted_tags", {})
    if spec == 2:
        out["deleted_tags"] = sorted(deleted)
    else:
        main = desc["branches"]["main"]
        out["deleted_tags"] = {k: ids[main if v is None else v]
                               for k, v in deleted.items()}
    out["config"] = desc.get("config" if spec == 2 else "config_yaml")
    return out


def verify_repo(repo, desc):
    """0 when describe of repo gives desc back (canonical forms), else 1."""
    import difflib
    spec = detect_spec(repo)
    got = describe_repo(repo)
    want = json.dumps(normal_desc(desc, spec), indent=1, sort_keys=True,
                      ensure_ascii=False).splitlines()
    have = json.dumps(normal_desc(got, spec), indent=1, sort_keys=True,
                      ensure_ascii=False).splitlines()
    if want == have:
        return 0
    for line in difflib.unified_diff(want, have, "description", repo,
                                     lineterm="", n=2):
        print(line)
    return 1


# ---------------------------------------------------------------- compare


def canonical(d, with_config=True):
    """A dump with ids, times, sizes and writer names taken out, so that
    two repositories with the same content compare equal."""
    snaps = {s["id"]: s for s in d["snapshots"]}
    name = {}
    for sid in snaps:
        chain = ancestry(snaps, sid)
        name[sid] = "%d:%s" % (len(chain), snaps[sid]["message"])

    def ref(r):
        """A chunk ref without its ids."""
        out = {"type": r["type"], "index": r["index"]}
        if r["type"] == "native":
            out.update(length=r["length"], sha256=r.get("sha256"))
        elif r["type"] == "inline":
            out["data_hex"] = r["data_hex"]
        else:
            out.update({k: r[k] for k in ("location", "offset", "length",
                                          "etag", "last_modified")
                        if k in r})
        return out
    out = {"branches": {k: name[v] for k, v in d["branches"].items()},
           "tags": {k: name[v] for k, v in d["tags"].items()},
           "deleted_tags": sorted(d["deleted_tags"]), "log": d["log"],
           "snapshots": {}}
    if with_config:
        out["config"] = d.get("config", d.get("config_yaml"))
    for sid, s in snaps.items():
        nodes = []
        for n in s["nodes"]:
            node = {k: n[k] for k in ("path", "type", "user_data",
                                      "user_data_hex", "dimension_names")
                    if k in n}
            if n["type"] == "array":
                node["shape"] = [[x["array_length"], x["num_chunks"]]
                                 if "num_chunks" in x else
                                 [x["array_length"],
                                  -(-x["array_length"] //
                                    max(1, x["chunk_length"]))]
                                 for x in n["shape"]]
                node["manifests"] = sorted(
                    [{"extents": m["extents"],
                      "refs": [ref(r) for r in d["manifests"][m["id"]]
                               ["arrays"].get(n["node_id"], [])]}
                     for m in n["manifests"]], key=lambda m: m["extents"])
            nodes.append(node)
        out["snapshots"][name[sid]] = {
            "parent": name.get(s["parent"]), "message": s["message"],
            "metadata": s["metadata"], "nodes": nodes,
            "manifest_files": sorted(f["num_chunk_refs"]
                                     for f in s["manifest_files"])}
    return out


def compare_repos(a, b, with_config):
    """0 when two repositories hold the same content, else 1 and a diff."""
    import difflib
    ta = json.dumps(canonical(dump_repo(a), with_config), indent=1,
                    sort_keys=True, ensure_ascii=False).splitlines()
    tb = json.dumps(canonical(dump_repo(b), with_config), indent=1,
                    sort_keys=True, ensure_ascii=False).splitlines()
    if ta == tb:
        return 0
    for line in difflib.unified_diff(ta, tb, a, b, lineterm="", n=2):
        print(line)
    return 1


def virtual_desc(spec, containers, chunks):
    """The description of a repository whose array /v holds one int32
    virtual chunk per reference of chunks, under the virtual chunk
    containers given as {url_prefix: {kind: settings}} (hostile settings
    included: an endpoint_url anywhere)."""
    arr = {"shape": [len(chunks)], "data_type": "int32",
           "chunk_grid": {"name": "regular",
                          "configuration": {"chunk_shape": [1]}},
           "chunk_key_encoding": {"name": "default",
                                  "configuration": {"separator": "/"}},
           "fill_value": 0,
           "codecs": [{"name": "bytes",
                       "configuration": {"endian": "little"}}],
           "attributes": {}, "zarr_format": 3, "node_type": "array"}
    grp = {"attributes": {}, "zarr_format": 3, "node_type": "group"}
    refs = [{"index": [i], "virtual": v} for i, v in enumerate(chunks)]
    desc = {"spec": spec, "snapshots": [{
        "id": "s1", "parent": None, "message": "virtual",
        "nodes": [{"path": "/", "type": "group", "zarr": grp},
                  {"path": "/v", "type": "array", "zarr": arr,
                   "chunks": refs}]}],
        "branches": {"main": "s1"}, "tags": {}, "deleted_tags": {}}
    if spec == 2:
        desc["config"] = {"virtual_chunk_containers": {
            k: {"name": None, "url_prefix": k, "store": v}
            for k, v in containers.items()}}
    else:
        y = "virtual_chunk_containers:\n"
        for i, (k, v) in enumerate(containers.items()):
            y += "  c%d:\n    name: c%d\n    url_prefix: %s\n" % (i, i, k)
            kind, conf = next(iter(v.items()))
            y += "    store: !%s\n" % kind
            for ck, cv in conf.items():
                y += "      %s: %s\n" % (ck, json.dumps(cv))
        desc["config_yaml"] = y
    return desc


def main(argv):
    """Command line dispatch."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("dump")
    p.add_argument("repo")
    p.add_argument("--no-chunks", action="store_true",
                   help="do not read native chunk bytes for their sha256")
    p.add_argument("--no-manifests", action="store_true",
                   help="leave manifest files out (large repositories)")
    p = sub.add_parser("write")
    p.add_argument("out")
    p.add_argument("desc", help="JSON description (- for stdin)")
    p.add_argument("--spec", type=int, choices=(1, 2))
    p.add_argument("--uncompressed", action="store_true",
                   help="compression byte 0 instead of zstd")
    p = sub.add_parser("virtual")
    p.add_argument("out")
    p.add_argument("containers", help="JSON: {url_prefix: {kind: settings}}")
    p.add_argument("chunks", help="JSON: a list of virtual chunk references")
    p.add_argument("--spec", type=int, choices=(1, 2), default=2)
    p = sub.add_parser("describe")
    p.add_argument("repo")
    p = sub.add_parser("verify")
    p.add_argument("repo")
    p.add_argument("desc")
    p = sub.add_parser("compare")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--no-config", action="store_true")
    p = sub.add_parser("scale")
    p.add_argument("out")
    p.add_argument("--spec", type=int, choices=(1, 2), default=2)
    p.add_argument("-n", "--refs", type=int, default=1000000)
    p.add_argument("-m", "--manifests", type=int, default=100)
    p.add_argument("-s", "--snapshots", type=int, default=1000)
    p.add_argument("-e", "--elems", type=int, default=4,
                   help="int32 elements per chunk")
    p.add_argument("--uncompressed", action="store_true")
    p = sub.add_parser("hostile")
    p.add_argument("out")
    p.add_argument("case", choices=HOSTILE_CASES)
    p.add_argument("--spec", type=int, choices=(1, 2), default=2)
    p.add_argument("-n", type=int, default=3,
                   help="snapshots in the cycle (cycle), in the history "
                   "(long)")
    p.add_argument("--message-bytes", type=int, default=0,
                   help="commit messages padded to this many bytes")
    args = ap.parse_args(argv)
    if args.cmd == "dump":
        json.dump(dump_repo(args.repo, not args.no_chunks,
                            not args.no_manifests), sys.stdout,
                  indent=1, ensure_ascii=False, sort_keys=False)
        print()
    elif args.cmd == "write":
        f = sys.stdin if args.desc == "-" else open(args.desc,
                                                     encoding="utf-8")
        desc = json.load(f)
        spec = args.spec or desc.get("spec", 2)
        if os.path.exists(args.out) and os.listdir(args.out):
            raise FormatError("%s: exists and is not empty" % args.out)
        RepoWriter(args.out, spec, not args.uncompressed).write(desc)
    elif args.cmd == "virtual":
        if os.path.exists(args.out) and os.listdir(args.out):
            raise FormatError("%s: exists and is not empty" % args.out)
        desc = virtual_desc(args.spec, json.loads(args.containers),
                            json.loads(args.chunks))
        RepoWriter(args.out, args.spec, True).write(desc)
    elif args.cmd == "scale":
        if os.path.exists(args.out) and os.listdir(args.out):
            raise FormatError("%s: exists and is not empty" % args.out)
        print(json.dumps(write_scale(args.out, args.spec, args.refs,
                                     args.manifests, args.snapshots,
                                     args.elems, not args.uncompressed)))
    elif args.cmd == "hostile":
        if os.path.exists(args.out) and os.listdir(args.out):
            raise FormatError("%s: exists and is not empty" % args.out)
        if args.n < 1 or (args.case == "long" and args.n < 2):
            raise ValueError("-n: too few snapshots for %s" % args.case)
        print(json.dumps(write_hostile(args.out, args.case, args.spec,
                                       args.n, args.message_bytes)))
    elif args.cmd == "describe":
        json.dump(describe_repo(args.repo), sys.stdout, indent=1,
                  ensure_ascii=False)
        print()
    elif args.cmd == "verify":
        with open(args.desc, encoding="utf-8") as f:
            return verify_repo(args.repo, json.load(f))
    elif args.cmd == "compare":
        return compare_repos(args.a, args.b, not args.no_config)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (FormatError, ValueError, KeyError, OSError) as e:
        print("icechunk_writer: %s" % e, file=sys.stderr)
        sys.exit(1)
