"""A benchmark request Slurm refuses is blamed on the benchmark field that makes it
impossible (``benchmarks[N].gpus``, ``.nodes``, ``.eval_minutes``), read against what
``sinfo`` says of the partition; otherwise on the placement (None here)."""

from __future__ import annotations

from outerloop.compute.base import JobSpec
from outerloop.contract import Benchmark
from outerloop.doctor.benchmarks import Request, blame
from outerloop.doctor.partitions import GRES_GPU_RE, Partition

BENCH = Benchmark(name="tour", command="python e.py", metric="m", direction="min",
                  eval_minutes=30)
PART = Partition("gpu", nodes={"a", "b"}, gpus=[{"": 4}, {"a100": 2, "v100": 2}],
                 max_minutes=60)


def _request(gpus: int = 0, nodes: int = 1, minutes: int = 10,
             gpu_type: str | None = None) -> Request:
    spec = JobSpec(name="x", command="true", workdir="/w", log_dir="/l", time_minutes=minutes,
                   gpus=gpus, nodes=nodes, partition="gpu", gpu_type=gpu_type)
    return Request("o/n", 2, BENCH, "eval", spec)


def test_more_gpus_than_any_node_has_blames_the_benchmarks_gpus() -> None:
    found = blame(_request(gpus=8), {"gpu": PART}, None, "Requested node configuration is "
                  "not available")
    assert found is not None
    detail, fix = found
    assert detail.startswith("benchmarks[2].gpus = 8 (tour)") and "the most is 4" in detail
    assert "Requested node configuration" in detail
    assert fix.startswith("lower benchmarks[2].gpus to at most 4 in o/n's .outerloop.yaml")


def test_a_gpu_type_counts_only_the_nodes_gpus_of_that_type() -> None:
    found = blame(_request(gpus=3, gpu_type="a100"), {"gpu": PART}, None, "refused")
    assert found is not None and "has 3 a100 GPUs (the most is 2)" in found[0]


def test_more_nodes_than_the_partition_has_blames_the_benchmarks_nodes() -> None:
    found = blame(_request(gpus=1, nodes=3), {"gpu": PART}, None, "refused")
    assert found is not None and found[0].startswith("benchmarks[2].nodes = 3")


def test_a_pair_job_over_the_partitions_limit_blames_eval_minutes() -> None:
    found = blame(_request(minutes=62), {"gpu": PART}, None, "refused")
    assert found is not None and found[0].startswith("benchmarks[2].eval_minutes = 30")
    assert "so its pair job fits in 60 min" in found[1]
    assert "never cap [compute.eval] time_minutes below 62" in found[1]  # issue 51


def test_a_request_that_fits_the_partition_blames_the_placement() -> None:
    assert blame(_request(gpus=2), {"gpu": PART}, None, "Invalid qos") is None
    assert blame(_request(gpus=8), {}, None, "invalid partition") is None


def test_gres_strings_of_sinfo_give_gpu_counts_per_type() -> None:
    found = [(m.group(1), int(m.group(2))) for m in
             GRES_GPU_RE.finditer("gpu:a100:4(S:0-1),gpu:2,shard:8")]
    assert found == [("a100", 4), (None, 2)]
