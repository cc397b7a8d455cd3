"""The tamper corpus: for every graded test cell of notebooks 01-11, a wrong answer plus tampering.

Per notebook there are two fixture students with the same wrong answers:

- `honest_wrong_<nn>` submits them as they are: every visible check fails, every
  test cell scores 0;
- `tamper_<nn>` submits them together with in-kernel tampering, the attacks a
  hostile student would try: the guard's callbacks are dropped first (so no
  score can rely on the guard), every visible check is patched to pass (so the
  hidden part really runs), and each test cell gets at least one technique:

  `patched_observe`  `q.<exercise>.observe = ...` returns a forged observation
                     (no programs, old-style "it used psum" flags);
  `code_swap`        `q.<exercise>._observe.__code__ = fake.__code__`: the
                     identity stays, the code records a forged observation
                     (the wrong answer's programs with the grading
                     instructions rewritten: values off, trivial inputs);
  `forged_record`    the notebook's `record` (and `namedaxes.grading.record`)
                     rebound to write the forged observation instead;
  `visible_files`    observation files hand-written during the visible check,
                     and the hidden part made to fail, so only they exist;
  `thread_files`     a thread that keeps writing forged files for that cell
                     while the rest of the notebook runs;
  `symlink`          the observation folder replaced by a link to the
                     reference cache folder, holding forged files.

Both must score exactly the same: 0 on every test cell of their notebook. The
expected pass sets are empty, so `test_fixture_scores_and_status` checks the
scores; `test_tamper.py` checks the rest (equal rows, reference cache intact).

The other side of the same grading: `equivalent_<nn>` (notebooks in `EQUIVALENT`)
answers every exercise with a different correct formulation than the reference
(the ones a visible check once refused, or a wrong grader might) and must get
every test cell's points.
"""

from __future__ import annotations

import textwrap

import autograder_specs as specs

A03, A04, A05, A06 = "03_nested_axes", "04_gradient_averaging", "05_shard_map", "06_multi_process"
A07 = "07_collectives"
A08 = "08_compiler_sharding"
A09 = "09_large_models"
A10 = "10_training_at_scale"
A11 = "11_step_anatomy"
TECHNIQUES = ("patched_observe", "code_swap", "forged_record", "visible_files", "thread_files", "symlink")

# notebook -> answer cell grade_id -> wrong answer (plausible mistakes, each fails its visible check)
WRONG = {
    specs.A01: {
        "rank_weighted_sum_answer": "def rank_weighted_sum(x):\n"  # each device's own term, never added up
        "    return lax.axis_index(DEVICES) * x\n",
        "last_device_value_answer": "def last_device_value(x):\n"  # right on 8 devices only
        "    return lax.psum(jnp.where(lax.axis_index(DEVICES) == 7, x, 0.0), DEVICES)\n",
        "center_answer": "def center(x):\n    return x - jnp.mean(x)\n",
    },
    specs.A02: {
        "scaled_sum_answer": "def scaled_sum(x):\n    return lax.pmean(x * 2.0, axis_name=DEVICES)\n",  # no psum point
        "scaled_mean_answer": "def scaled_mean(x):\n"  # the mean of the per-device means
        "    return lax.pmean(jnp.nanmean(x * 2.0), axis_name=DEVICES)\n",
        "global_max_share_answer": "def global_max_share(x):\n"  # the largest share, replicated
        "    return lax.pmax(x / lax.pmax(jnp.abs(x), DEVICES), DEVICES)\n",
    },
    A03: {
        "grid_sums_answer": "def grid_sums(x):\n    return x, x, x\n",
        "device_numbers_answer": "def device_numbers(x):\n"  # right on the 2 x 4 grid only
        "    i, j = lax.axis_index(DATA_SHARDS), lax.axis_index(MODEL_REPLICAS)\n"
        "    return i * 4 + j, j * 2 + i\n",
        "row_normalize_answer": "def row_normalize(x, mesh):\n"  # pmean for psum: 4 times too large
        "    spec = P(DATA_SHARDS, MODEL_REPLICAS)\n"
        "    def block(b):\n"
        "        return b / lax.pmean(jnp.sum(b, axis=1, keepdims=True), MODEL_REPLICAS)\n"
        "    return jax.shard_map(block, mesh=mesh, in_specs=spec, out_specs=spec)(x)\n",
        "tp_dp_step_answer": "def tp_dp_step(w, batch, mesh):\n"  # jax.grad already summed: 2x the step
        "    def local_step(wb, xb, yb):\n"
        "        loss = lambda v: jnp.mean((lax.psum(xb @ v, MODEL_REPLICAS) - yb) ** 2)\n"
        "        return wb - LEARNING_RATE * lax.pmean(jax.grad(loss)(wb), DATA_SHARDS)\n"
        "    specs = (P(MODEL_REPLICAS), P(DATA_SHARDS, MODEL_REPLICAS), P(DATA_SHARDS))\n"
        "    return jax.shard_map(local_step, mesh=mesh, in_specs=specs,\n"
        "                         out_specs=P(MODEL_REPLICAS))(w, batch['x'], batch['y'])\n",
    },
    A04: {
        "loss_fn_answer": "def loss_fn(params, local_batch):\n"
        "    return jnp.sum((params['w'] * local_batch['x'] + params['b'] - local_batch['y']) ** 2)\n",
        "compute_gradients_answer": "def compute_gradients(params, local_batch):\n"
        "    return jax.tree.map(jnp.zeros_like, params)\n",
        "parallel_update_step_answer": "def parallel_update_step(params, sharded_batch):\n"  # its own shard's loss
        "    grads = lax.pmean(compute_gradients(params, sharded_batch), DATA_PARALLEL)\n"
        "    new = jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)\n"
        "    return new, loss_fn(params, sharded_batch)\n",
        "train_answer": "def train(params, sharded_batch, steps):\n    return params, jnp.zeros((steps,))\n",
    },
    A05: {  # one-device code with no parallelism at all (the 9-of-11 attack)
        "sharded_scaled_sum_answer": "def sharded_scaled_sum(x, mesh):\n    return 2.0 * jnp.sum(x, axis=0)\n",
        "replica_totals_answer": "def replica_totals(x, mesh):\n    return x.sum(axis=1)\n",
        "dp_train_step_answer": "def dp_train_step(params, batch, mesh):\n"  # right numbers: all_gather, no psum
        "    def step(p, local_batch):\n"
        "        full = lax.all_gather(local_batch, DATA_PARALLEL, tiled=True)\n"
        "        def loss(q):\n"
        "            errors = q['w'] * full['x'] + q['b'] - full['y']\n"
        "            return jnp.sum(full['weight'] * errors ** 2) / jnp.sum(full['weight'])\n"
        "        return sgd_update(p, jax.grad(loss)(p))\n"
        "    params = jax.device_put(params, NamedSharding(mesh, P()))\n"
        "    batch = jax.device_put(batch, NamedSharding(mesh, P(DATA_PARALLEL)))\n"
        "    return jax.shard_map(step, mesh=mesh, in_specs=(P(), P(DATA_PARALLEL)), out_specs=P(),\n"
        "                         check_vma=False)(params, batch)\n",
        "jit_train_step_answer": "def jit_train_step(params, batch, mesh):\n    return sgd_step(params, batch)\n",
        "weighted_total_shard_map_answer": "def weighted_total_shard_map(w, x, mesh):\n"
        "    return jnp.sum(w[:, None] * x, axis=1), w[:, None] * x\n",
    },
    A06: {  # right on the 2 x 4 cluster only: section 3's one-row-per-device formula, hard-coded 8 and 4
        "local_rows_answer": "def local_rows(global_batch):\n"
        "    n, i = jax.local_device_count(), jax.process_index()\n"
        "    return jax.tree.map(lambda a: a[i * n:(i + 1) * n], global_batch)\n",
        "global_metrics_answer": "def global_metrics(errors, mesh):\n"
        "    def per_device(block):\n"
        "        mine = jax.nn.one_hot(lax.axis_index(DEVICES) // 4, 2) * jnp.sum(block)\n"
        "        return {'total': lax.pmean(jnp.sum(block), DEVICES) * 8,\n"
        "                'mean': lax.psum(jnp.mean(block), DEVICES) / 8,\n"
        "                'per_process': lax.psum(mine, DEVICES)}\n"
        "    return jax.shard_map(per_device, mesh=mesh, in_specs=P(DEVICES), out_specs=P())(errors)\n",
        "masked_step_answer": "def masked_step(params, batch, mesh):\n"  # own means, psum / local_device_count()
        "    def step(p, b):\n"
        "        own = lax.pcast(p, DATA_PARALLEL, to='varying')\n"
        "        def loss(q):\n"
        "            err = jnp.where(b['mask'], model.predict(q, b['x']) - b['y'], 0.0)\n"
        "            return jnp.sum(err ** 2) / jnp.sum(b['mask'])\n"
        "        g = jax.tree.map(lambda g: lax.psum(g, DATA_PARALLEL) / jax.local_device_count(),\n"
        "                         jax.grad(loss)(own))\n"
        "        return jax.tree.map(lambda w, g: w - model.LEARNING_RATE * g, p, g)\n"
        "    return jax.shard_map(step, mesh=mesh, in_specs=(P(), P(DATA_PARALLEL)),\n"
        "                         out_specs=P())(params, batch)\n",
    },
    A07: {
        "median_centered_answer": "def median_centered(x, mesh):\n"  # each device's own column medians
        "    return jax.shard_map(lambda b: b - jnp.median(b, axis=0), mesh=mesh,\n"
        "                         in_specs=P(DEVICES), out_specs=P(DEVICES))(x)\n",
        "sum_scatter_columns_answer": "def sum_scatter_columns(x, mesh):\n"  # half the total, columns not scaled
        "    def cols(b):\n"
        "        return lax.psum_scatter(b, DEVICES, scatter_dimension=1, tiled=True) / 2\n"
        "    return jax.shard_map(cols, mesh=mesh, in_specs=P(DEVICES),\n"
        "                         out_specs=P(None, DEVICES))(x)\n",
        "ring_all_reduce_answer": "def ring_all_reduce(x, mesh):\n"  # right values, no ring
        "    return jax.shard_map(lambda b: lax.psum(b, DEVICES), mesh=mesh,\n"
        "                         in_specs=P(DEVICES), out_specs=P(DEVICES))(x)\n",
        "fsdp_step_answer": "def fsdp_step(w, batch, mesh):\n"  # forgets to divide by k
        "    def step(w_shard, local_batch):\n"
        "        w_full = lax.all_gather(w_shard, DATA_PARALLEL, tiled=True)\n"
        "        g = jax.grad(loss_fn)(w_full, local_batch)\n"
        "        return w_shard - LEARNING_RATE * lax.psum_scatter(g, DATA_PARALLEL, tiled=True)\n"
        "    return jax.shard_map(step, mesh=mesh, in_specs=(P(DATA_PARALLEL), P(DATA_PARALLEL)),\n"
        "                         out_specs=P(DATA_PARALLEL))(w, batch)\n",
    },
    A08: {
        "one_all_reduce_mlp_answer": "def one_all_reduce_mlp(x, w1, w2, mesh):\n"  # no layout: no work split
        "    return jax.nn.relu(x @ w1) @ w2\n",
        "feature_correlation_answer": "def feature_correlation(x, mesh):\n"  # the covariance, not divided
        "    centred = x - jnp.mean(x, axis=0)\n"
        "    rows = NamedSharding(mesh, P(MODEL_PARALLEL, None))\n"
        "    return jnp.matmul(centred.T, centred, out_sharding=rows) / x.shape[0]\n",
        "collective_matmul_rows_answer": "def collective_matmul_rows(x, w, mesh):\n"  # right values, no ring
        "    def local(x_block, w_block):\n"
        "        return lax.all_gather(x_block, MODEL_PARALLEL, tiled=True) @ w_block\n"
        "    return jax.shard_map(local, mesh=mesh, in_specs=(P(MODEL_PARALLEL, None),\n"
        "                         P(None, MODEL_PARALLEL)), out_specs=P(None, MODEL_PARALLEL))(x, w)\n",
    },
    A09: {
        "pipeline_loss_answer": "def pipeline_loss(params, x, y, mesh):\n"  # right values: every stage on every device
        "    whole = jax.tree.map(lambda a: jax.reshard(a, NamedSharding(mesh, P())), params)\n"
        "    h = x\n"
        "    for s in range(whole['w'].shape[0]):\n"
        "        h = jnp.tanh(h @ whole['w'][s] + whole['b'][s])\n"
        "    return jnp.mean((h - y) ** 2)\n",
        "moe_layer_answer": "def moe_layer(x, router, w, mesh):\n"  # the gate forgotten
        "    n = mesh.shape[EXPERTS]\n"
        "    def local(x_block, router, w_expert):\n"
        "        dispatch, gate = route(x_block, router, n, CAPACITY)\n"
        "        sent = lax.all_to_all(jnp.einsum('tec,td->ecd', dispatch, x_block), EXPERTS, 0, 0, tiled=True)\n"
        "        back = lax.all_to_all(jax.nn.relu(sent @ w_expert[0]), EXPERTS, 0, 0, tiled=True)\n"
        "        return jnp.einsum('tec,ecd->td', dispatch, back)\n"
        "    return jax.shard_map(local, mesh=mesh, in_specs=(P(EXPERTS), P(), P(EXPERTS)),\n"
        "                         out_specs=P(EXPERTS))(x, router, w)\n",
        "causal_ring_attention_answer": "def causal_ring_attention(q, k, v, mesh):\n"  # right values: all_gather
        "    def local(qb, kb, vb):\n"
        "        b, h = qb.shape\n"
        "        keys, values = lax.all_gather(kb, SEQUENCE, tiled=True), lax.all_gather(vb, SEQUENCE, tiled=True)\n"
        "        rows = lax.axis_index(SEQUENCE) * b + jnp.arange(b)\n"
        "        allowed = jnp.arange(keys.shape[0])[None, :] <= rows[:, None]\n"
        "        scores = jnp.where(allowed, qb @ keys.T / np.sqrt(h), -jnp.inf)\n"
        "        return jax.nn.softmax(scores, axis=1) @ values\n"
        "    spec = P(SEQUENCE)\n"
        "    return jax.shard_map(local, mesh=mesh, in_specs=(spec, spec, spec), out_specs=spec)(q, k, v)\n",
    },
    A10: {
        "swiglu_block_answer": "def swiglu_block(x, gate, up, down, mesh):\n"  # right values: everything gathered
        "    gate, up, down = (jax.reshard(w, P()) for w in (gate, up, down))\n"
        "    return (jax.nn.silu(x @ gate) * (x @ up)) @ down\n",
        "step_costs_answer": "def step_costs(config, layout, batch):\n"  # the whole model's figures, layout ignored
        "    n = sum(int(np.prod(s)) for s in tm.shapes(config).values())\n"
        "    return {'state_bytes': 12 * n, 'gather_bytes': 4 * n, 'grad_reduce_bytes': 4 * n,\n"
        "            'tensor_reduce_bytes': 0, 'flops': 6 * batch * config.seq * n}\n",
        "choose_layout_answer": "def choose_layout(config, batch, budget):\n"  # the least memory, whatever it moves
        "    return (1, 8, 1)\n",
        "step_time_answer": "def step_time(config, layout, batch, chip):\n"  # results' bytes, dispatch added
        "    c = step_costs(config, layout, batch)\n"
        "    hbm = tm.hbm_bytes(config, batch, c['state_bytes'] // 12, layout)\n"
        "    terms = {'compute': c['flops'] / chip['flops_per_s'], 'memory': hbm / chip['hbm_bytes_per_s'],\n"
        "             'dispatch': chip['seconds_per_call'] + 32 * chip['seconds_per_array'],\n"
        "             'communication': (c['gather_bytes'] + c['grad_reduce_bytes'] + c['tensor_reduce_bytes'])\n"
        "             / chip['link_bytes_per_s']}\n"
        "    return {**terms, 'total': sum(terms.values()), 'bound': max(terms, key=terms.get)}\n",
    },
    A11: {
        "mixed_train_step_answer": "def mixed_train_step(params, state, window):\n"  # float32 throughout
        "    return tm.train_step(params, state, window)\n",
        "zero_specs_answer": "def zero_specs(stage):\n"  # the gradients never split: stages 2 and 3 all-reduce
        "    return {'params': P(ZERO) if stage >= 3 else P(), 'grads': P(), 'opt_state': P(ZERO)}\n",
        "accumulate_grads_answer": "def accumulate_grads(params, xs, ys):\n"  # one reduction per microbatch, in a scan
        "    def body(total, xy):\n"
        "        return jax.tree.map(jnp.add, total, jax.grad(zr.mlp_loss)(params, *xy)), None\n"
        "    total, _ = lax.scan(body, jax.tree.map(jnp.zeros_like, params), (xs, ys))\n"
        "    return jax.tree.map(lambda g: g / xs.shape[0], total)\n",
    },
}

# notebook -> answer cell grade_id -> a correct answer written differently from the reference (full marks)
EQUIVALENT = {
    specs.A01: {
        "rank_weighted_sum_answer": "def rank_weighted_sum(x):\n"
        "    return lax.psum(x * lax.axis_index(DEVICES).astype(x.dtype), DEVICES)\n",
        "last_device_value_answer": "def last_device_value(x):\n    return lax.all_gather(x, DEVICES)[-1]\n",
        "center_answer": "def center(x):\n"  # a gathered mean of everything
        "    return x - jnp.mean(lax.all_gather(x, DEVICES))\n",
    },
    specs.A02: {
        "scaled_sum_answer": "def scaled_sum(x):\n"  # a psum in disguise: all 3 points
        "    return lax.pmean(x * 2.0, axis_name=DEVICES) * lax.psum(1, DEVICES)\n",
        "scaled_mean_answer": "def scaled_mean(x):\n"
        "    count = jnp.sum(~jnp.isnan(x)).astype(x.dtype)\n"
        "    return lax.pmean(jnp.nansum(2.0 * x), DEVICES) / lax.pmean(count, DEVICES)\n",
        "global_max_share_answer": "def global_max_share(x):\n"
        "    return x / jnp.maximum(lax.pmax(x, DEVICES), -lax.pmin(x, DEVICES))\n",
    },
    A03: {
        "grid_sums_answer": "def grid_sums(x):\n"  # gather + sum, pmean * size
        "    same_data = lax.all_gather(x, MODEL_REPLICAS).sum(axis=0)\n"
        "    same_model = lax.pmean(x, DATA_SHARDS) * lax.axis_size(DATA_SHARDS)\n"
        "    neither = lax.psum(same_data, DATA_SHARDS) - same_data - same_model + x\n"
        "    return same_data, same_model, neither\n",
        "device_numbers_answer": "def device_numbers(x):\n"  # arithmetic, no tuple of names
        "    i, j = lax.axis_index(DATA_SHARDS), lax.axis_index(MODEL_REPLICAS)\n"
        "    return i * lax.axis_size(MODEL_REPLICAS) + j, j * lax.psum(1, DATA_SHARDS) + i\n",
        "row_normalize_answer": "def row_normalize(x, mesh):\n"  # pmean times the row's device count
        "    spec = P(DATA_SHARDS, MODEL_REPLICAS)\n"
        "    def block(b):\n"
        "        partial = jnp.sum(b, axis=1, keepdims=True)\n"
        "        return b / (lax.pmean(partial, MODEL_REPLICAS) * lax.axis_size(MODEL_REPLICAS))\n"
        "    return jax.shard_map(block, mesh=mesh, in_specs=spec, out_specs=spec)(x)\n",
        "tp_dp_step_answer": "def tp_dp_step(w, batch, mesh):\n"  # jax.grad of the loss averaged over data
        "    def local_step(wb, xb, yb):\n"
        "        loss = lambda v: lax.pmean(jnp.mean((lax.psum(xb @ v, MODEL_REPLICAS) - yb) ** 2),\n"
        "                                   DATA_SHARDS)\n"
        "        return wb - LEARNING_RATE * jax.grad(loss)(wb)\n"
        "    specs = (P(MODEL_REPLICAS), P(DATA_SHARDS, MODEL_REPLICAS), P(DATA_SHARDS))\n"
        "    return jax.shard_map(local_step, mesh=mesh, in_specs=specs,\n"
        "                         out_specs=P(MODEL_REPLICAS))(w, batch['x'], batch['y'])\n",
    },
    A04: {
        "loss_fn_answer": "def loss_fn(params, local_batch):\n"
        "    errors = local_batch['y'] - (params['w'] * local_batch['x'] + params['b'])\n"
        "    return jnp.sum(errors * errors) / errors.size\n",
        "compute_gradients_answer": "def compute_gradients(params, local_batch):\n"  # value_and_grad, not shown
        "    return jax.value_and_grad(loss_fn)(params, local_batch)[1]\n",
        "parallel_update_step_answer": "def parallel_update_step(params, sharded_batch):\n"  # psum / device count
        "    n = lax.psum(1, DATA_PARALLEL)\n"
        "    loss = lax.psum(loss_fn(params, sharded_batch), DATA_PARALLEL) / n\n"
        "    grads = lax.psum(compute_gradients(params, sharded_batch), DATA_PARALLEL)\n"
        "    return {k: params[k] - 0.01 * grads[k] / n for k in params}, loss\n",
        "train_answer": "def train(params, sharded_batch, steps):\n"  # a Python loop of JAX arrays
        "    losses = []\n"
        "    for _ in range(steps):\n"
        "        params, loss = p_update_step(params, sharded_batch)\n"
        "        losses.append(loss)\n"
        "    losses.append(p_update_step(params, sharded_batch)[1])\n"
        "    return params, jnp.stack(losses)\n",
    },
    A05: {
        "sharded_scaled_sum_answer": "def sharded_scaled_sum(x, mesh):\n"
        "    k = mesh.shape[DEVICES]\n"
        "    x = jax.device_put(jnp.pad(x, ((0, -x.shape[0] % k), (0, 0))), NamedSharding(mesh, P(DEVICES)))\n"
        "    return jax.shard_map(lambda b: lax.psum(jnp.sum(b + b, axis=0), DEVICES), mesh=mesh,\n"
        "                         in_specs=P(DEVICES), out_specs=P())(x)\n",
        "replica_totals_answer": "def replica_totals(x, mesh):\n"
        "    return jax.shard_map(lambda b: lax.psum(b.sum(1), (MODEL_REPLICAS,)), mesh=mesh,\n"
        "                         in_specs=P(DATA_SHARDS, MODEL_REPLICAS), out_specs=P(DATA_SHARDS))(x)\n",
        "dp_train_step_answer": "def dp_train_step(params, batch, mesh):\n"  # notebook 04's shape: local gradients
        "    def step(p, local_batch):\n"
        "        own = lax.pcast(p, DATA_PARALLEL, to='varying')\n"
        "        def local_sum(q):\n"
        "            errors = q['w'] * local_batch['x'] + q['b'] - local_batch['y']\n"
        "            return jnp.sum(local_batch['weight'] * errors ** 2)\n"
        "        total = lax.psum(jnp.sum(local_batch['weight']), DATA_PARALLEL)\n"
        "        grads = lax.psum(jax.grad(local_sum)(own), DATA_PARALLEL)\n"
        "        return sgd_update(p, jax.tree.map(lambda g: g / total, grads))\n"
        "    params = jax.device_put(params, NamedSharding(mesh, P()))\n"
        "    batch = jax.device_put(batch, NamedSharding(mesh, P(DATA_PARALLEL)))\n"
        "    return jax.shard_map(step, mesh=mesh, in_specs=(P(), P(DATA_PARALLEL)),\n"
        "                         out_specs=P())(params, batch)\n",
        "jit_train_step_answer": "def jit_train_step(params, batch, mesh):\n"  # normalised weights, in_shardings
        "    def step(p, b):\n"
        "        share = b['weight'] / jnp.sum(b['weight'])\n"
        "        g = jax.grad(lambda q: jnp.sum(share * (q['w'] * b['x'] + q['b'] - b['y']) ** 2))(p)\n"
        "        return sgd_update(p, g)\n"
        "    shardings = (NamedSharding(mesh, P()), NamedSharding(mesh, P(DATA_PARALLEL)))\n"
        "    return jax.jit(step, in_shardings=shardings)(params, batch)\n",
        # transpose, then the table's axis 0
        "weighted_total_shard_map_answer": "def weighted_total_shard_map(w, x, mesh):\n"
        "    rows = jax.device_put(x.T, NamedSharding(mesh, P(DEVICES)))\n"
        "    def per_row(w, r):\n"
        "        total, column = weighted_total(w, r[0])\n"
        "        return total, column[None]\n"
        "    total, rows = jax.shard_map(per_row, mesh=mesh, in_specs=(P(), P(DEVICES)),\n"
        "                                out_specs=(P(), P(DEVICES)))(w, rows)\n"
        "    return total, rows.T\n",
    },
    A06: {
        "local_rows_answer": "def local_rows(global_batch):\n"  # jnp.split into process_count parts
        "    return jax.tree.map(lambda a: jnp.split(a, jax.process_count())[jax.process_index()],\n"
        "                        global_batch)\n",
        "global_metrics_answer": "def global_metrics(errors, mesh):\n"  # pmean * axis size, mesh.size, whole array
        "    def per_device(block):\n"
        "        k = lax.psum(1, DEVICES)\n"
        "        return {'total': lax.pmean(jnp.sum(block), DEVICES) * k,\n"
        "                'mean': lax.psum(jnp.sum(block), DEVICES) / (block.size * mesh.size)}\n"
        "    out = jax.shard_map(per_device, mesh=mesh, in_specs=P(DEVICES), out_specs=P())(errors)\n"
        "    whole = jax.reshard(errors, NamedSharding(mesh, P()))\n"
        "    return {**out, 'per_process': jnp.sum(whole.reshape(jax.process_count(), -1), axis=1)}\n",
        "masked_step_answer": "def masked_step(params, batch, mesh):\n"  # no pcast: JAX sums the gradient itself
        "    def step(p, b):\n"
        "        count = lax.psum(jnp.sum(b['mask'].astype(jnp.float32)), DATA_PARALLEL)\n"
        "        def sse(q):\n"
        "            return jnp.sum(b['mask'] * (model.predict(q, b['x']) - b['y']) ** 2)\n"
        "        g = jax.grad(sse)(p)\n"
        "        return {k: p[k] - model.LEARNING_RATE * g[k] / count for k in p}\n"
        "    return jax.shard_map(step, mesh=mesh, in_specs=(P(), P(DATA_PARALLEL)),\n"
        "                         out_specs=P())(params, batch)\n",
    },
    A08: {
        "one_all_reduce_mlp_answer": "def one_all_reduce_mlp(x, w1, w2, mesh):\n"  # Megatron's weight layouts
        "    on = lambda spec: NamedSharding(mesh, spec)\n"
        "    mlp = lambda x, a, b: jax.nn.relu(x @ a) @ b\n"
        "    return jax.jit(mlp, in_shardings=(on(P()), on(P(None, MODEL_PARALLEL)),\n"
        "                   on(P(MODEL_PARALLEL, None))), out_shardings=on(P()))(x, w1, w2)\n",
        "feature_correlation_answer": "def feature_correlation(x, mesh):\n"  # standardize, then einsum
        "    centred = x - jnp.mean(x, axis=0)\n"
        "    z = centred / jnp.sqrt(jnp.mean(centred ** 2, axis=0))\n"
        "    rows = NamedSharding(mesh, P(MODEL_PARALLEL, None))\n"
        "    return jnp.einsum('nd,ne->de', z, z, out_sharding=rows) / x.shape[0]\n",
        "collective_matmul_rows_answer": "def collective_matmul_rows(x, w, mesh):\n"  # fori_loop, ring to the left
        "    k = mesh.shape[MODEL_PARALLEL]\n"
        "    def local(xb, wb):\n"
        "        rows, i = xb.shape[0], lax.axis_index(MODEL_PARALLEL)\n"
        "        def step(s, carry):\n"
        "            out, block = carry\n"
        "            out = lax.dynamic_update_slice_in_dim(out, block @ wb, ((i + s) % k) * rows, axis=0)\n"
        "            return out, lax.ppermute(block, MODEL_PARALLEL, [(j, (j - 1) % k) for j in range(k)])\n"
        "        start = lax.pcast(jnp.zeros((k * rows, wb.shape[1]), xb.dtype), (MODEL_PARALLEL,), to='varying')\n"
        "        out, block = lax.fori_loop(0, k - 1, step, (start, xb))\n"
        "        return lax.dynamic_update_slice_in_dim(out, block @ wb, ((i + k - 1) % k) * rows, axis=0)\n"
        "    return jax.shard_map(local, mesh=mesh, in_specs=(P(MODEL_PARALLEL, None), P(None, MODEL_PARALLEL)),\n"
        "                         out_specs=P(None, MODEL_PARALLEL))(x, w)\n",
    },
    A09: {
        "pipeline_loss_answer": "def pipeline_loss(params, x, y, mesh):\n"  # a ring: outputs scored on stage 0
        "    k = mesh.shape[STAGES]\n"
        "    ring = [(i, (i + 1) % k) for i in range(k)]\n"
        "    def local(w, b, x, y):\n"
        "        stage = lax.axis_index(STAGES)\n"
        "        xs = x.reshape(MICROBATCHES, -1, x.shape[1])\n"
        "        ys = y.reshape(MICROBATCHES, -1, y.shape[1])\n"
        "        state, loss = jnp.zeros_like(xs[0]), 0.0\n"
        "        for t in range(MICROBATCHES + k - 1):\n"
        "            if t < MICROBATCHES:\n"
        "                state = jnp.where(stage == 0, xs[t], state)\n"
        "            state = lax.ppermute(jnp.tanh(state @ w[0] + b[0]), STAGES, ring)\n"
        "            if t >= k - 1:\n"
        "                loss = loss + jnp.where(stage == 0, jnp.sum((state - ys[t - k + 1]) ** 2), 0.0)\n"
        "        return lax.psum(loss, STAGES) / y.size\n"
        "    return jax.shard_map(local, mesh=mesh, in_specs=(P(STAGES), P(STAGES), P(), P()),\n"
        "                         out_specs=P())(params['w'], params['b'], x, y)\n",
        "moe_layer_answer": "def moe_layer(x, router, w, mesh):\n"  # the gate applied before the tokens leave
        "    n = mesh.shape[EXPERTS]\n"
        "    def local(x_block, router, w_expert):\n"
        "        dispatch, gate = route(x_block, router, n, CAPACITY)\n"
        "        send = jnp.einsum('tec,td->ecd', dispatch * gate[:, None, None], x_block)\n"
        "        sent = lax.all_to_all(send, EXPERTS, 0, 0, tiled=True)\n"
        "        back = lax.all_to_all(jax.nn.relu(sent @ w_expert[0]), EXPERTS, 0, 0, tiled=True)\n"
        "        return jnp.einsum('tec,ecd->td', dispatch, back)\n"
        "    return jax.shard_map(local, mesh=mesh, in_specs=(P(EXPERTS), P(), P(EXPERTS)),\n"
        "                         out_specs=P(EXPERTS))(x, router, w)\n",
        "causal_ring_attention_answer": "def causal_ring_attention(q, k, v, mesh):\n"  # a fori_loop ring
        "    n = mesh.shape[SEQUENCE]\n"
        "    def local(qb, kb, vb):\n"
        "        b, h = qb.shape\n"
        "        i = lax.axis_index(SEQUENCE)\n"
        "        rows = i * b + jnp.arange(b)\n"
        "        def step(s, carry):\n"
        "            kb, vb, m, total, acc = carry\n"
        "            cols = ((i - s) % n) * b + jnp.arange(b)\n"
        "            scores = jnp.where(cols[None, :] <= rows[:, None], qb @ kb.T / np.sqrt(h), -jnp.inf)\n"
        "            m_new = jnp.maximum(m, scores.max(1))\n"
        "            p, fix = jnp.exp(scores - m_new[:, None]), jnp.exp(m - m_new)\n"
        "            total, acc = total * fix + p.sum(1), acc * fix[:, None] + p @ vb\n"
        "            kb, vb = lax.ppermute((kb, vb), SEQUENCE, [(a, (a + 1) % n) for a in range(n)])\n"
        "            return kb, vb, m_new, total, acc\n"
        "        start = (jnp.full((b,), -jnp.inf), jnp.zeros((b,)), jnp.zeros((b, h)))\n"
        "        start = lax.pcast(start, (SEQUENCE,), to='varying')\n"
        "        _, _, _, total, acc = lax.fori_loop(0, n, step, (kb, vb, *start))\n"
        "        return acc / total[:, None]\n"
        "    spec = P(SEQUENCE)\n"
        "    return jax.shard_map(local, mesh=mesh, in_specs=(spec, spec, spec), out_specs=spec)(q, k, v)\n",
    },
    A10: {
        "swiglu_block_answer": "def swiglu_block(x, gate, up, down, mesh):\n"  # the hidden layout named, one reshard
        "    cols, rows = P(None, MODEL_PARALLEL), P(MODEL_PARALLEL, None)\n"
        "    gate, up, down = jax.reshard((gate, up, down), (cols, cols, rows))\n"
        "    g = jnp.einsum('btd,df->btf', x, gate, out_sharding=P(BATCH, None, MODEL_PARALLEL))\n"
        "    u = jnp.einsum('btd,df->btf', x, up, out_sharding=P(BATCH, None, MODEL_PARALLEL))\n"
        "    return jnp.einsum('btf,fd->btd', jax.nn.silu(g) * u, down, out_sharding=P(BATCH))\n",
        "step_costs_answer": "def step_costs(config, layout, batch):\n"  # parameter by parameter, in floats
        "    data, fsdp, tensor = layout\n"
        "    d, f = config.d_model, config.mlp * config.d_model\n"
        "    matrices = config.layers * (4 * d * d + 2 * d * f) / tensor\n"
        "    tables = 2 * config.vocab * d + config.seq * d\n"
        "    norms = (2 * config.layers + 1) * d\n"
        "    tokens = batch / (data * fsdp) * config.seq\n"
        "    attention = 4 * config.layers * tokens * config.seq * d / tensor\n"
        "    flops = 3 * (2 * tokens * (matrices + d * config.vocab) + attention)\n"
        "    return {'state_bytes': 12 * ((matrices + tables) / fsdp + norms),\n"
        "            'gather_bytes': 4 * (matrices + tables) * (fsdp > 1),\n"
        "            'grad_reduce_bytes': 4 * (matrices + tables + norms) * (data * fsdp > 1),\n"
        "            'tensor_reduce_bytes': 16 * config.layers * tokens * d * (tensor > 1), 'flops': flops}\n",
        "choose_layout_answer": "def choose_layout(config, batch, budget):\n"  # the last of ties, as a list
        "    fitting = []\n"
        "    for data, fsdp, tensor in LAYOUTS:\n"
        "        if config.heads % tensor or batch % (data * fsdp) or config.d_model % fsdp or config.vocab % fsdp:\n"
        "            continue\n"
        "        c = step_costs(config, (data, fsdp, tensor), batch)\n"
        "        if c['state_bytes'] <= budget:\n"
        "            moved = c['gather_bytes'] + c['grad_reduce_bytes'] + c['tensor_reduce_bytes']\n"
        "            fitting.append((moved, [-data, -fsdp, -tensor]))\n"
        "    return [-v for v in min(fitting)[1]]\n",
        "step_time_answer": "def step_time(config, layout, batch, chip):\n"  # a loop of ring factors, in µs first
        "    data, fsdp, tensor = layout\n"
        "    c = step_costs(config, layout, batch)\n"
        "    rings = [(c['gather_bytes'], fsdp, 1), (c['grad_reduce_bytes'], data * fsdp, 2),\n"
        "             (c['tensor_reduce_bytes'], tensor, 2)]\n"
        "    sent = sum(b * k * (n - 1) / n for b, n, k in rings)\n"
        "    hops = sum(k * (n - 1) for b, n, k in rings)\n"
        "    link = chip['link_bytes_per_s'] * (2.0 if chip['wraparound'] else 1.0)\n"
        "    hbm = tm.hbm_bytes(config, batch, c['state_bytes'] / 12, layout)\n"
        "    arrays = 2 + 3 * len(tm.shapes(config))\n"
        "    us = {'compute': 1e6 * c['flops'] / chip['flops_per_s'], 'memory': 1e6 * hbm / chip['hbm_bytes_per_s'],\n"
        "          'dispatch': 1e6 * (chip['seconds_per_call'] + arrays * chip['seconds_per_array']),\n"
        "          'communication': 1e6 * (hops * chip['hop_seconds'] + sent / link)}\n"
        "    device = us['compute'] + us['memory'] + us['communication']\n"
        "    if us['dispatch'] > device:\n"
        "        bound = 'dispatch'\n"
        "    else:\n"
        "        bound = max(('compute', 'memory', 'communication'), key=us.get)\n"
        "    seconds = {k: v / 1e6 for k, v in us.items()}\n"
        "    return {**seconds, 'total': max(us['dispatch'], device) / 1e6, 'bound': bound}\n",
    },
    A11: {
        "mixed_train_step_answer": "def mixed_train_step(params, state, window):\n"  # a dict comprehension, asarray
        "    def loss_of(p):\n"
        "        p = {k: v.astype(jnp.bfloat16) for k, v in p.items()}\n"
        "        logits = jnp.asarray(tm.forward(p, window[:, :-1]), jnp.float32)\n"
        "        return tm.cross_entropy(logits, window[:, 1:])\n"
        "    loss, grads = jax.value_and_grad(loss_of)(params)\n"
        "    updates, state = tm.OPTIMIZER.update(grads, state, params)\n"
        "    return optax.apply_updates(params, updates), state, loss\n",
        "zero_specs_answer": "def zero_specs(stage):\n"  # a table, trailing Nones
        "    table = {1: (P(), P(None), P(ZERO, None)), 2: (P(None, None), P(ZERO, None), P(ZERO, None)),\n"
        "             3: (P(ZERO, None), P(ZERO, None), P(ZERO, None))}\n"
        "    return dict(zip(('params', 'grads', 'opt_state'), table[stage]))\n",
        "accumulate_grads_answer": "def accumulate_grads(params, xs, ys):\n"  # unreduced gradients added in a scan
        "    used = jax.tree.map(lambda a: jax.reshard(a, P(reduced={ZERO})), params)\n"
        "    first = jax.grad(zr.mlp_loss)(used, xs[0], ys[0])\n"
        "    def body(total, xy):\n"
        "        return jax.tree.map(jnp.add, total, jax.grad(zr.mlp_loss)(used, *xy)), None\n"
        "    total, _ = lax.scan(body, first, (xs[1:], ys[1:]))\n"
        "    return jax.tree.map(lambda g: jax.reshard(g, P()) / xs.shape[0], total)\n",
    },
}

# notebook -> test cell grade_id -> (the `q.<name>` exercise its test cell uses, techniques)
CELLS = {
    specs.A01: {
        "rank_weighted_sum_values": ("rank_weighted_sum", ("patched_observe", "code_swap")),
        "last_device_value_values": ("last_device_value", ("forged_record",)),
        "center_pmap_and_vmap": ("center", ("visible_files", "symlink")),
    },
    specs.A02: {
        "scaled_sum_total": ("scaled_sum", ("code_swap",)),
        "scaled_sum_uses_psum": ("scaled_sum_uses_psum", ("patched_observe",)),
        "scaled_mean_value": ("scaled_mean", ("thread_files", "forged_record")),
        "global_max_share_value": ("global_max_share", ("visible_files", "symlink")),
    },
    A03: {
        "grid_sums_each_axis": ("grid_sums", ("forged_record", "thread_files")),
        "device_numbers_both_orders": ("device_numbers", ("code_swap",)),
        "row_normalize_shard_map": ("row_normalize", ("patched_observe", "symlink")),
        "tp_dp_step_update": ("tp_dp_step", ("visible_files", "code_swap")),
    },
    A04: {
        "loss_fn_mean_squared_error": ("loss_fn", ("visible_files",)),
        "compute_gradients_values": ("compute_gradients", ("code_swap",)),
        "update_step_averages_gradients": ("parallel_update_step", ("forged_record", "thread_files")),
        "train_losses_and_params": ("train", ("patched_observe", "symlink")),
    },
    A05: {
        "sharded_scaled_sum_total": ("sharded_scaled_sum", ("code_swap",)),
        "replica_totals_blocks": ("replica_totals", ("patched_observe",)),
        "dp_train_step_update": ("dp_train_step", ("forged_record",)),
        "jit_train_step_all_reduce": ("jit_train_step", ("thread_files", "visible_files")),
        "weighted_total_migration": ("weighted_total_shard_map", ("symlink",)),
    },
    A06: {
        "local_rows_per_process": ("local_rows", ("patched_observe", "visible_files", "code_swap")),
        "global_metrics_across_processes": ("global_metrics", ("thread_files", "code_swap")),
        "masked_step_across_processes": ("masked_step", ("forged_record", "symlink")),
    },
    A07: {
        "median_centered_values": ("median_centered", ("code_swap", "visible_files")),
        "sum_scatter_columns_values": ("sum_scatter_columns", ("patched_observe",)),
        "ring_all_reduce_equals_psum": ("ring_all_reduce", ("forged_record", "thread_files")),
        "fsdp_step_update": ("fsdp_step", ("symlink",)),
    },
    A08: {
        "one_all_reduce_mlp_compiled": ("one_all_reduce_mlp", ("patched_observe", "thread_files")),
        "feature_correlation_explicit": ("feature_correlation", ("code_swap", "symlink")),
        "collective_matmul_rows_ring": ("collective_matmul_rows", ("forged_record", "visible_files")),
    },
    A09: {
        "pipeline_loss_gpipe": ("pipeline_loss", ("code_swap", "symlink")),
        "moe_layer_all_to_all": ("moe_layer", ("patched_observe", "forged_record")),
        "causal_ring_attention_ring": ("causal_ring_attention", ("thread_files", "visible_files")),
    },
    A10: {
        "swiglu_block_megatron": ("swiglu_block", ("code_swap", "symlink")),
        "step_costs_formulas": ("step_costs", ("patched_observe", "forged_record")),
        "choose_layout_budget": ("choose_layout", ("thread_files", "visible_files")),
        "step_time_model": ("step_time", ("patched_observe", "symlink")),
    },
    A11: {
        "mixed_train_step_bf16": ("mixed_train_step", ("code_swap", "symlink")),
        "zero_specs_stages": ("zero_specs", ("patched_observe", "forged_record")),
        "accumulate_grads_once": ("accumulate_grads", ("thread_files", "visible_files")),
    },
}

# Run once, in the notebook's first answer cell: drop the guard, define the forging helpers.
PRELUDE = r'''
import builtins as _b, json as _json, os as _os, threading as _threading, time as _time, types as _types
import numpy as _np
import namedaxes.grading as _g
_ip = get_ipython()
_ip.events.callbacks = {name: [] for name in list(_ip.events.callbacks)}   # the guard never runs again
_OBS = _os.environ.get("NAMEDAXES_OBSERVE_DIR", ".")
_OLD = {"axes": ["devices", "data_shards", "model_replicas", "data_parallel_axis"], "psum_over_devices": True,
        "psum_over_devices_vector": True, "communicates_over_data_shards": False, "compiled_all_reduce": True,
        "explicit_collective_axes": []}

def _forge(obs):
    """The (wrong) observation with its grading instructions rewritten and old-style flags added."""
    obs = dict(obs or {})
    meta = _json.loads(_json.dumps(obs.get("programs") or {"format": "namedaxes-exported-1", "cases": {}}))
    for case in meta.get("cases", {}).values():
        case.update(values=False, draw={"kind": "integers", "low": 0, "high": 1}, rtol=1e9, atol=1e9)
    obs["programs"] = meta
    obs.update(_OLD)
    return obs

def _write(folder, gid, obs):
    arrays = {k: _np.asarray(v) for k, v in obs.items() if hasattr(v, "shape")}
    values = {k: v for k, v in obs.items() if k not in arrays}
    with open(_os.path.join(folder, gid + ".npz"), "wb") as fh:
        _np.savez(fh, **arrays)
    with open(_os.path.join(folder, gid + ".json"), "w") as fh:
        fh.write(_json.dumps(values, default=str))

def _pass(ex, before=None):
    def check(*answer):
        if before is not None:
            before()
        print(f"Correct: `{ex.name}` passes the visible checks.")
    ex.check = check

_b._tamper_forge = _forge
_real_record = record
_forged_cells = set()

def record(gid, obs):
    """Rebound `record`: cells in `_forged_cells` get the forged observation."""
    _real_record(gid, _forge(obs) if gid in _forged_cells else obs)
_g.record = record
'''


def technique(name: str, gid: str, exercise: str, ref_folder: str) -> str:
    """The tampering code for one test cell (runs in the first answer cell, after PRELUDE)."""
    ex = f"q.{exercise}"
    if name == "patched_observe":
        return f"{ex}.observe = lambda *a, **k: _forge({{}})\n"
    if name == "code_swap":
        return textwrap.dedent(f"""\
            _b._tamper_real_{gid} = _types.FunctionType({ex}._observe.__code__, {ex}._observe.__globals__)
            def _fake(*answer):
                import builtins
                return builtins._tamper_forge(getattr(builtins, "_tamper_real_{gid}")(*answer))
            {ex}._observe.__code__ = _fake.__code__
            """)
    if name == "forged_record":
        return f"_forged_cells.add({gid!r})\n"
    if name == "visible_files":
        return textwrap.dedent(f"""\
            _pass({ex}, before=lambda: _write(_OBS, {gid!r}, _forge({{}})))
            def _refuse(*a, **k):
                raise RuntimeError("no hidden results today")
            {ex}.observe = _refuse
            """)
    if name == "thread_files":
        return textwrap.dedent(f"""\
            def _keep_writing(gid={gid!r}):
                while True:
                    try:
                        _write(_OBS, gid, _forge({{}}))
                    except OSError:
                        pass
                    _time.sleep(0.005)
            _threading.Thread(target=_keep_writing, daemon=True).start()
            """)
    if name == "symlink":
        return textwrap.dedent(f"""\
            _forged_dir = _OBS.rstrip("/") + ".forged"
            _os.makedirs(_forged_dir, exist_ok=True)
            _write(_forged_dir, {gid!r}, _forge({{}}))
            def _swap_folder(target={ref_folder!r}):
                try:
                    _os.rename(_OBS, _OBS.rstrip("/") + ".real")
                    _os.symlink(target if _os.path.isdir(target) else _forged_dir, _OBS)
                except OSError:
                    pass
            _pass({ex}, before=_swap_folder)
            """)
    raise ValueError(name)


def tamper_code(assignment: str, ref_folder: str) -> str:
    parts = [PRELUDE]
    for gid, (exercise, names) in CELLS[assignment].items():
        parts.append(f"_pass(q.{exercise})\n")
        for name in names:
            parts.append(technique(name, gid, exercise, ref_folder))
    return "".join(parts)


def _answers(assignment: str, tampered: bool, ref_folder: str = "") -> dict[str, str]:
    answers = dict(WRONG[assignment])
    if tampered:
        first = next(iter(answers))
        answers[first] = answers[first] + "\n" + tamper_code(assignment, ref_folder)
    return answers


def tamper_specs(ref_folder: str = "") -> list[specs.Spec]:
    """Two students per notebook; `ref_folder` is the reference cache folder the symlinks point at."""
    out = []
    for assignment in WRONG:
        nn = assignment[:2]
        out.append(
            specs.Spec(f"honest_wrong_{nn}", "ok", set(), assignment=assignment, answers=_answers(assignment, False))
        )
        out.append(
            specs.Spec(
                f"tamper_{nn}", "ok", set(), assignment=assignment, answers=_answers(assignment, True, ref_folder)
            )
        )
    for assignment, answers in EQUIVALENT.items():
        out.append(
            specs.Spec(f"equivalent_{assignment[:2]}", "ok", specs.ALL, assignment=assignment, answers=dict(answers))
        )
    return out


def coverage() -> dict[str, set[str]]:
    """technique -> the test cells it is used on (every technique used, every cell covered)."""
    used: dict[str, set[str]] = {t: set() for t in TECHNIQUES}
    for cells in CELLS.values():
        for gid, (_, names) in cells.items():
            for name in names:
                used[name].add(gid)
    return used


SPECS = tamper_specs()


def point_links_at(ref_folder: str) -> None:
    """Rewrite the `symlink` tampering of SPECS to point the observation folder at `ref_folder`."""
    for spec in SPECS:
        if spec.student.startswith("tamper_"):
            spec.answers.update(_answers(spec.assignment, True, ref_folder))


# ---------------------------------------------------------------- issue 46: a circulated table of right figures
def old_hidden_cost_cases() -> list:
    """Notebook 10's hidden cost cases of before issue 46: drawn the same in every run, from the grade id."""
    from namedaxes.exercises.training_at_scale.cases import LAYOUTS
    from namedaxes.exercises.training_at_scale.cases import usable as _usable
    from namedaxes.grading import rng
    from namedaxes.transformer import Config

    r, cases = rng("step_costs_formulas"), []
    while len(cases) < 16:
        heads = int(r.choice([2, 4, 6, 8, 12, 16]))
        config = Config(
            vocab=8 * int(r.randint(2, 13)),
            d_model=heads * int(r.choice([4, 6, 8, 16])),
            heads=heads,
            layers=int(r.randint(1, 7)),
            seq=int(r.choice([8, 12, 16, 20, 24, 32])),
            mlp=int(r.randint(2, 5)),
        )
        layout = LAYOUTS[int(r.randint(len(LAYOUTS)))]
        batch = layout[0] * layout[1] * int(r.randint(1, 7))
        if not _usable(config, layout, batch):
            cases.append((config, layout, batch))
    return cases


def old_hidden_layouts() -> list:
    """Notebook 10's hidden layout cases of before issue 46, a literal list in the kernel's package."""
    from namedaxes.transformer import Config

    return [
        (Config(vocab=40, d_model=32, heads=4, layers=4, seq=16, mlp=2), 8, 266_000),
        (Config(vocab=24, d_model=96, heads=6, layers=5, seq=32, mlp=2), 24, 11_635_000),
        (Config(vocab=88, d_model=128, heads=8, layers=6, seq=12, mlp=2), 64, 3_949_000),
        (Config(vocab=56, d_model=32, heads=8, layers=5, seq=24, mlp=4), 24, 453_000),
        (Config(vocab=32, d_model=128, heads=16, layers=1, seq=16, mlp=3), 64, 1_068_000),
        (Config(vocab=96, d_model=48, heads=12, layers=1, seq=16, mlp=2), 8, 155_000),
        (Config(vocab=88, d_model=16, heads=2, layers=1, seq=8, mlp=2), 8, 24_000),
        (Config(vocab=96, d_model=64, heads=4, layers=1, seq=24, mlp=2), 8, 239_000),
    ]


def circulated_answers() -> dict[str, str]:
    """Answer cells that hold no formula, only a table of right figures filled once from the solution on
    the visible cases and on the old fixed hidden cases (step_time never had any: its visible cases only),
    then circulated (any other case: zeros, or pure data parallelism). They pass the visible checks; the
    grader's cases of a run are in no table."""
    from namedaxes.exercises import training_at_scale as q
    from namedaxes.exercises.training_at_scale import timing as training_time
    from tools.answer_tables import read_solution_answers

    right = read_solution_answers(A10, ("step_costs", "choose_layout", "step_time"))
    costs = {repr(c): right["step_costs"](*c) for c in [*q.cases.COST_CASES, *old_hidden_cost_cases()]}
    chosen = {repr(c): tuple(right["choose_layout"](*c)) for c in [*q.cases.LAYOUT_CASES, *old_hidden_layouts()]}
    times = {repr((*c[:3], sorted(c[3].items()))): right["step_time"](*c) for c in training_time._TIME_CASES}
    return {
        "step_costs_answer": f"_FIGURES = {costs!r}\n\n"
        "def step_costs(config, layout, batch):\n"
        "    zeros = dict.fromkeys(COST_KEYS, 0)\n"
        "    return dict(_FIGURES.get(repr((config, tuple(layout), batch)), zeros))\n",
        "choose_layout_answer": f"_CHOSEN = {chosen!r}\n\n"
        "def choose_layout(config, batch, budget):\n"
        "    return _CHOSEN.get(repr((config, batch, budget)), (8, 1, 1))\n",
        "step_time_answer": f"_TIMES = {times!r}\n\n"
        "def step_time(config, layout, batch, chip):\n"
        "    zeros = {'dispatch': 0.0, 'compute': 0.0, 'memory': 0.0, 'communication': 0.0, 'total': 0.0}\n"
        "    key = repr((config, tuple(layout), batch, sorted(chip.items())))\n"
        "    return dict(_TIMES.get(key, {**zeros, 'bound': 'compute'}))\n",
    }


CIRCULATED = specs.Spec(
    "circulated_10",
    "ok",
    {"swiglu_block_megatron"},
    assignment=A10,
    answers={"swiglu_block_answer": "{solution}", **circulated_answers()},
)
SPECS.append(CIRCULATED)
