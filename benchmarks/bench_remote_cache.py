"""Remote cache figures: the benchmark index on moto's S3 server (loopback), a first process and a
later one for `locate` (present and absent item), `search --item` and `check`.

Each action runs on a freshly opened store with the per-index cache folder of the earlier runs
(the state a later process finds): the first run keeps the item map (stamped with the ETags its
listings give), the later ones check it by listing. Printed per run: wall time, requests
(GETs and listing pages), listing pages alone, and the floor those requests allow at the
server's quickest answer. moto lists 1,000 keys per page, as S3 does. Figures only; nothing
passes or fails. Needs moto (its S3 server) and boto3 (the test group) and obstore.

    .venv-newest/bin/python benchmarks/bench_remote_cache.py [--rows 200000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _bench_index import ROWS, bench_index_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=ROWS, help=f"items of the benchmark index (default {ROWS:,})")
    parser.add_argument("--repeat", type=int, default=2, help="later runs of each action (default 2)")
    parser.add_argument("--max-in-flight", type=int, default=64, help="concurrent requests per store")
    args = parser.parse_args()
    index = bench_index_path(rows=args.rows)
    with tempfile.TemporaryDirectory(prefix="ecpfs-remote-cache-") as cache:
        os.environ["ECPFS_VIEWER_CACHE"] = cache
        run(index, args.repeat, args.max_in_flight)


def run(index: Path, repeat: int, max_in_flight: int) -> None:
    import cloud_emulators
    import numpy as np

    from ecpfs_viewer.model.search import IndexReader, SearchParams
    from ecpfs_viewer.model.search.results import UnknownItemError
    from ecpfs_viewer.model.storage.opening import OpenedStore, open_store
    from ecpfs_viewer.model.storage.options import RemoteOptions
    from ecpfs_viewer.model.validation import validate
    from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

    local = IndexReader(index)
    leaves = local.leaf_ids()
    middle = local.node(local.levels, leaves[len(leaves) // 2])
    present = int(np.asarray(middle.ids)[0])  # type: ignore[union-attr]
    absent = int(local.root.ids.max()) + 10_000_000 if local.root.ids.size else 1 << 31
    with cloud_emulators.moto_s3() as endpoint:
        started = time.perf_counter()
        objects = cloud_emulators.S3Server(endpoint).upload_folder("bench", index, index.name)
        print(f"uploaded {objects:,} objects of {index.name} to moto's S3 in {time.perf_counter() - started:.0f} s")
        url = f"s3://bench/{index.name}"
        options = RemoteOptions(endpoint=endpoint, max_in_flight=max_in_flight)

        def opened() -> OpenedStore:
            return open_store(url, remote=options)

        def locate(item: int) -> Callable[[], tuple[object, OpenedStore]]:
            def job() -> tuple[object, OpenedStore]:
                reader = IndexReader(opened())
                try:
                    answer: object = reader.locate(item).leaf_path
                except UnknownItemError:
                    answer = "not in the index"
                reader.finish_item_map()  # as the CLI does after printing
                return answer, reader.store

            return job

        def search_item() -> tuple[object, OpenedStore]:
            reader = IndexReader(opened())
            query = reader.vector_for_item(present)
            found = reader.search(query, SearchParams(k=10, search_exp=4))
            reader.finish_item_map()
            return f"{len(found.items)} items", reader.store

        def check() -> tuple[object, OpenedStore]:
            from ecpfs_viewer.model.ecpfs.derived_listing import index_hierarchy

            h: Hierarchy = index_hierarchy(opened())
            report = validate(h)
            return f"{len(report.errors)} errors", h.store

        jobs = {f"locate {present} (present)": locate(present), f"locate {absent} (absent)": locate(absent),
                f"search --item {present}": search_item, "check": check}
        print("floor: ceil(requests / in flight) round trips x the server's quickest answer")
        print(f"{'action':<30} {'run':<7} {'seconds':>8} {'requests':>9} {'listings':>9}  floor; result")
        for label, job in jobs.items():
            for turn in range(1 + repeat):
                began = time.perf_counter()
                outcome, store = job()
                seconds = time.perf_counter() - began
                stats, floor = store.stats(), store.request_floor()
                store.close()
                print(f"{label:<30} {'first' if turn == 0 else 'later':<7} {seconds:8.2f} {stats.requests:9,d} "
                      f"{stats.listings:9,d}  {floor.seconds if floor else 0:.2f} s; {outcome}", flush=True)


if __name__ == "__main__":
    main()
