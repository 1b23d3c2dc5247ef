"""usercustomize.py - imported by every python3 of an integration test
when the daemon was built without blosc (configure --without-blosc;
tests/integration/lib.sh puts this directory on PYTHONPATH only then).

zarr-python 2 writes Blosc unless told otherwise, and xarray through it;
such a daemon refuses Blosc by name. The default compressor becomes Zstd
(which every build has), so the stores the tests write stay readable and
the tests of the views still run; a test that names Blosc itself is not
changed."""
try:
    import numcodecs
    import zarr.creation
    import zarr.storage

    zarr.storage.default_compressor = numcodecs.Zstd(level=1)
    zarr.creation.default_compressor = zarr.storage.default_compressor
except Exception:  # no zarr-python: nothing to change
    pass
