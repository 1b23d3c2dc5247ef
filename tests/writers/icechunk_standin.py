#!/usr/bin/python3
"""icechunk_standin.py - the description (icechunk_writer.py write) of a
stand-in for Icechunk's test-repo-v1/-v2 (../shared/fixtures/icechunk, its
EXPECTED.md), written from the facts the mount tests check, not from the
repositories: for a fresh clone, where those are absent.

  main:  Repository initialized -> empty structure -> fill data -> set
         virtual chunk. /group1 ("is a nice group"); small_chunks, int32
         [5] in chunks of 1, fill 8, inline chunks of 84; big_chunks, int32
         [10, 10] in 5x5 chunks of 42, native, c/0/0 made virtual
         (s3://testbucket/can_read_old/chunk-1, under a container in spec 2).
  delete a chunk (tag "it works!"): small_chunks' last chunk gone.
  some more structure (my-branch, tag "it also works!"): +
         /group2/group3/group4/group5/inner, float64 [100], NaN, no chunk
         ("is a nice array").
  The tag "deleted" (on fill data) is deleted.

Usage: icechunk_standin.py > DESC.json
"""
import json


def arr(shape, chunks, dt, fill, attrs):
    return {"zarr_format": 3, "node_type": "array", "shape": shape, "data_type": dt,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": fill,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "attributes": attrs}


def grp(attrs):
    return {"zarr_format": 3, "node_type": "group", "attributes": attrs}


def main():
    small = [{"index": [i], "inline": "54000000"} for i in range(5)]
    big = [{"index": [i, j], "native": "2a000000" * 25, "file": "big"}
           for i in range(2) for j in range(2)]
    virtual = {"index": [0, 0], "virtual": {
        "location": "s3://testbucket/can_read_old/chunk-1", "offset": 0, "length": 100}}
    root = {"path": "/", "type": "group", "zarr": grp({})}
    g1 = {"path": "/group1", "type": "group", "zarr": grp({"description": "is a nice group"})}

    def tree(big_chunks, small_chunks):
        return [root, g1,
                {"path": "/group1/big_chunks", "type": "array",
                 "zarr": arr([10, 10], [5, 5], "int32", 0, {}), "chunks": big_chunks},
                {"path": "/group1/small_chunks", "type": "array",
                 "zarr": arr([5], [1], "int32", 8, {}), "chunks": small_chunks}]

    with_virtual = [virtual] + big[1:]
    more = tree(with_virtual, small[:4])
    for g in ("/group2", "/group2/group3", "/group2/group3/group4",
              "/group2/group3/group4/group5"):
        more.append({"path": g, "type": "group", "zarr": grp({})})
    more.append({"path": "/group2/group3/group4/group5/inner", "type": "array",
                 "chunks": [], "zarr": arr([100], [10], "float64", "NaN",
                                           {"description": "is a nice array"})})
    snaps = [("init", None, "Repository initialized", [root]),
             ("empty", "init", "empty structure", tree([], [])),
             ("fill", "empty", "fill data", tree(big, small)),
             ("virtual", "fill", "set virtual chunk", tree(with_virtual, small)),
             ("delete", "virtual", "delete a chunk", tree(with_virtual, small[:4])),
             ("more", "delete", "some more structure", more)]
    print(json.dumps({
        "snapshots": [{"id": i, "parent": p, "message": m, "nodes": n} for i, p, m, n in snaps],
        "branches": {"main": "virtual", "my-branch": "more"},
        "tags": {"it works!": "delete", "it also works!": "more"},
        "deleted_tags": {"deleted": "fill"},
        # spec 2: the virtual chunk is under a container the mount was not
        # told to trust (spec 1 has none): not authorized either way
        "config": {"virtual_chunk_containers": {"s3://testbucket/": {
            "name": None, "url_prefix": "s3://testbucket/",
            "store": {"s3": {"region": "us-east-1"}}}}}}))


if __name__ == "__main__":
    main()
