"""bench/zarrpy.py - bench/perf.sh's zarr-python reference (zarr 2.x).

  zarrpy.py version
      print zarr's version
  zarrpy.py write-strings PLAIN DIR CHUNK
      write the lines of PLAIN (one string a line) as a V2 array at DIR,
      dtype object with the VLenUTF8 codec and zstd level 3, CHUNK a chunk:
      what zarr-python itself writes for a string array
  zarrpy.py dump DIR strings|repr OUT
      write every element of the 1-D array at DIR to OUT, one a line, a
      chunk at a time: strings as they are, numbers as Python's repr;
      print "SECONDS LINES CHARACTERS": the seconds from opening the array to
      the last line written (imports and interpreter start excluded)
"""
import itertools
import sys
import time

import numcodecs
import numpy as np
import zarr


def write_strings(plain, path, chunk):
    """Copy the lines of plain into a new V2 vlen-utf8 array at path."""
    with open(plain, encoding="utf-8") as f:
        count = sum(1 for _ in f)
    z = zarr.open(path, mode="w", shape=(count,), chunks=(chunk,), dtype=object,
                  object_codec=numcodecs.VLenUTF8(),
                  compressor=numcodecs.Zstd(level=3))
    with open(plain, encoding="utf-8") as f:
        for start in range(0, count, chunk):
            lines = [s[:-1] for s in itertools.islice(f, chunk)]
            z[start:start + len(lines)] = np.array(lines, dtype=object)


def dump(path, kind, out_path):
    """Write the array at path to out_path as lines; return the counts."""
    lines = nbytes = 0
    t0 = time.perf_counter()
    z = zarr.open(path, mode="r")
    step = z.chunks[0]
    with open(out_path, "w", encoding="utf-8") as out:
        for start in range(0, z.shape[0], step):
            values = z[start:start + step].tolist()
            text = "\n".join(values if kind == "strings" else map(repr, values))
            text += "\n"
            out.write(text)
            lines += len(values)
            nbytes += len(text)  # characters: bytes for the ASCII test data
    return time.perf_counter() - t0, lines, nbytes


def main(argv):
    if argv[1:2] == ["version"]:
        print(zarr.__version__)
    elif argv[1:2] == ["write-strings"] and len(argv) == 5:
        write_strings(argv[2], argv[3], int(argv[4]))
    elif argv[1:2] == ["dump"] and len(argv) == 5 and argv[3] in ("strings", "repr"):
        secs, lines, nbytes = dump(argv[2], argv[3], argv[4])
        print(f"{secs:.3f} {lines} {nbytes}")
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
