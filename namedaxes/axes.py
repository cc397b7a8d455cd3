"""Axis names used throughout the course: one constant per name, no scattered literals."""

DEVICES = "devices"  # 01, 02: the one pmap axis
BATCH = "batch"  # 01: the same function under vmap
DATA_SHARDS = "data_shards"  # 03: outer axis of the 2 x 4 device grid
MODEL_REPLICAS = "model_replicas"  # 03: inner axis of the 2 x 4 device grid
DATA_PARALLEL = "data_parallel_axis"  # 04: data-parallel training
MODEL_PARALLEL = "model_parallel_axis"  # 08: tensor (model) parallelism: weights split over devices
FSDP = "fsdp_axis"  # 08: fully sharded data parallelism: parameters stored split
STAGES = "stage_axis"  # 09: pipeline parallelism: one stage of layers per device
EXPERTS = "expert_axis"  # 09: expert parallelism: one expert per device
SEQUENCE = "sequence_axis"  # 09: sequence (context) parallelism: one block of the sequence per device

N_DEVICES = 8  # the course always runs on 8 (possibly simulated) devices
GRID_SHAPE = (2, 4)  # (DATA_SHARDS, MODEL_REPLICAS)
GRID_AXES = (DATA_SHARDS, MODEL_REPLICAS)
