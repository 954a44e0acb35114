#!/usr/bin/env python3
"""Drops from a staged build cache every entry the staging run did not use, so that .gpu/ fits the
device call's 64 MiB carry. Used = created by the run (modified after `since`) or read by it
(access time after its modification time: ext4's relatime updates atime on the first read after a
write). A wrongly dropped entry costs a rebuild on the GPU machine, never a wrong result.
Usage: prune_cache.py CACHE_DIR SINCE_EPOCH_SECONDS
       prune_cache.py --reset-atimes CACHE_DIR   (before the runs: every entry's access time := its modification
                                                 time, so that a read afterwards is what marks it used)"""
import os
import sys

if sys.argv[1] == "--reset-atimes":
    for d, _, names in os.walk(sys.argv[2]):
        for n in names:
            p = os.path.join(d, n)
            st = os.stat(p)
            os.utime(p, (st.st_mtime, st.st_mtime))
    sys.exit(0)
cache, since = sys.argv[1], float(sys.argv[2])
kept = dropped = kept_bytes = 0
for d, _, names in os.walk(cache):
    for n in names:
        p = os.path.join(d, n)
        st = os.stat(p)
        if st.st_mtime > since or st.st_atime > st.st_mtime + 1:
            kept += 1
            kept_bytes += st.st_size
        else:
            os.remove(p)
            dropped += 1
print(f"prune_cache: kept {kept} entries ({kept_bytes / 1e6:.1f} MB), dropped {dropped} unused")
