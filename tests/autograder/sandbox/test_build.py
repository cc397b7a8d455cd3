"""sandbox/build.py: grading runs XLA with one thread per computation and keeps the caller's flags."""

from __future__ import annotations


def test_grading_runs_xla_with_one_thread_per_computation_and_keeps_the_callers_flags():
    from autograder.sandbox.build import grading_xla_flags as _grading_xla_flags

    assert _grading_xla_flags("--xla_force_host_platform_device_count=8").split() == [
        "--xla_force_host_platform_device_count=8",
        "--xla_cpu_multi_thread_eigen=false",
        "intra_op_parallelism_threads=1",
        "--xla_backend_optimization_level=0",
        "--xla_llvm_disable_expensive_passes=true",
    ]
    mine = (
        "--xla_cpu_multi_thread_eigen=true intra_op_parallelism_threads=2 --xla_backend_optimization_level=2 "
        "--xla_llvm_disable_expensive_passes=false"
    )
    assert _grading_xla_flags(mine) == mine  # an instructor's own choice wins
