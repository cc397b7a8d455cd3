"""Notebook 10's model: a small decoder-only transformer over characters, its optimizer and its sharding rules.

One source for the notebook (which shows this code and trains it), its exercises' checks and their tests.
Plain JAX, so that every sharding stays visible: the parameters are a dict of stacked arrays (one leading
dimension per layer), each with a `PartitionSpec` in `RULES` over three mesh axes, DATA_PARALLEL (the
batch), FSDP (the batch again, and the stored parameters and optimizer state) and MODEL_PARALLEL (attention
heads and MLP columns, Megatron style). An axis of size 1 splits nothing, so the same rules and the same
step run on one device (a 1 x 1 x 1 mesh) and on 8 (2 x 2 x 2, or any other layout).

The forward pass works on Explicit axes: before a matrix is used, `jax.reshard` gathers its FSDP shards
(the all-gather), and the two matmuls that sum over split heads or MLP columns name their result's layout
(`out_sharding=`), which is the all-reduce over MODEL_PARALLEL.

The optimizer is Optax's Adam (`OPTIMIZER`): its state holds a step count and two moments per parameter,
each made by `jnp.zeros_like` of the parameter, so stored with the parameter's sharding; its update is
element by element, so each shard is updated where it is stored, and the state needs no rules of its own.
`pipeline.py` runs the same layers in pipeline stages.

The corpus is the opening of Lewis Carroll's *Alice's Adventures in Wonderland* (1865, public domain),
lower-cased.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import json
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from .axes import DATA_PARALLEL, FSDP, MODEL_PARALLEL

__all__ = [
    "CORPUS",
    "ALPHABET",
    "Config",
    "BATCH",
    "RULES",
    "GATHERED",
    "encode",
    "decode",
    "batches",
    "layout_mesh",
    "init_params",
    "shapes",
    "forward",
    "embed",
    "block",
    "logits_of",
    "cross_entropy",
    "loss_fn",
    "OPTIMIZER",
    "train_step",
    "place",
    "sample",
    "LAYER_NAMES",
    "forward_scanned",
    "loss_scanned",
    "train_step_scanned",
    "recorded",
    "recorded_hlo",
    "hbm_bytes",
]

CORPUS = (
    "alice was beginning to get very tired of sitting by her sister on the bank, and of having nothing to do: "
    "once or twice she had peeped into the book her sister was reading, but it had no pictures or "
    "conversations in it, and what is the use of a book, thought alice without pictures or conversations? "
    "so she was considering in her own mind (as well as she could, for the hot day made her feel very sleepy "
    "and stupid), whether the pleasure of making a daisy-chain would be worth the trouble of getting up and "
    "picking the daisies, when suddenly a white rabbit with pink eyes ran close by her. there was nothing so "
    "very remarkable in that; nor did alice think it so very much out of the way to hear the rabbit say to "
    "itself, oh dear! oh dear! i shall be late! but when the rabbit actually took a watch out of its "
    "waistcoat-pocket, and looked at it, and then hurried on, alice started to her feet, for it flashed "
    "across her mind that she had never before seen a rabbit with either a waistcoat-pocket, or a watch to "
    "take out of it, and burning with curiosity, she ran across the field after it, and fortunately was just "
    "in time to see it pop down a large rabbit-hole under the hedge. in another moment down went alice after "
    "it, never once considering how in the world she was to get out again. "
)
CORPUS = CORPUS.translate(str.maketrans("!?:;", "..,,", "()"))  # 27 characters: fewer punctuation marks
ALPHABET = "".join(sorted(set(CORPUS)))  # the characters of the corpus, each a token


@dataclasses.dataclass(frozen=True)
class Config:
    """The model's sizes: vocabulary (padded to a multiple of 8), width, heads, layers, context length."""

    vocab: int = 32
    d_model: int = 32
    heads: int = 4
    layers: int = 2
    seq: int = 32
    mlp: int = 4  # the MLP's hidden width is mlp * d_model

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads


BATCH = (DATA_PARALLEL, FSDP)  # the batch dimension is split over both data axes
RULES = {  # how each parameter (and its Adam moments) is stored
    "embed": P(None, FSDP),  # (vocab, d_model)
    "pos": P(None, FSDP),  # (seq, d_model)
    "norm1": P(),  # (layers, d_model)
    "qkv": P(None, FSDP, None, MODEL_PARALLEL, None),  # (layers, d_model, 3, heads, head_dim)
    "out": P(None, MODEL_PARALLEL, None, FSDP),  # (layers, heads, head_dim, d_model)
    "norm2": P(),  # (layers, d_model)
    "up": P(None, FSDP, MODEL_PARALLEL),  # (layers, d_model, mlp * d_model)
    "down": P(None, MODEL_PARALLEL, FSDP),  # (layers, mlp * d_model, d_model)
    "final_norm": P(),  # (d_model,)
    "unembed": P(FSDP, None),  # (d_model, vocab)
}
GATHERED = {  # how one layer's matrix is used: its FSDP shards gathered, its tensor split kept
    "embed": P(),
    "pos": P(),
    "qkv": P(None, None, MODEL_PARALLEL, None),
    "out": P(MODEL_PARALLEL, None, None),
    "up": P(None, MODEL_PARALLEL),
    "down": P(MODEL_PARALLEL, None),
    "unembed": P(),
}


def encode(text: str) -> np.ndarray:
    return np.array([ALPHABET.index(c) for c in text], np.int32)


def decode(ids) -> str:
    return "".join(ALPHABET[int(i)] if int(i) < len(ALPHABET) else "?" for i in ids)


def batches(config: Config, batch: int, steps: int, seed: int = 0) -> np.ndarray:
    """`steps` batches of `batch` windows of seq + 1 characters of the corpus: (steps, batch, seq + 1)."""
    ids = encode(CORPUS)
    starts = np.random.default_rng(seed).integers(0, len(ids) - config.seq - 1, size=(steps, batch))
    return ids[starts[..., None] + np.arange(config.seq + 1)]


def layout_mesh(data: int, fsdp: int, tensor: int):
    """A mesh (DATA_PARALLEL, FSDP, MODEL_PARALLEL) of Explicit axes over the first data * fsdp * tensor devices."""
    shape = (data, fsdp, tensor)
    return jax.make_mesh(
        shape,
        (DATA_PARALLEL, FSDP, MODEL_PARALLEL),
        axis_types=(AxisType.Explicit,) * 3,
        devices=jax.devices()[: math.prod(shape)],
    )


def shapes(config: Config) -> dict[str, tuple[int, ...]]:
    """Each parameter's shape."""
    c, layers, d, f = config, config.layers, config.d_model, config.mlp * config.d_model
    return {
        "embed": (c.vocab, d),
        "pos": (c.seq, d),
        "norm1": (layers, d),
        "qkv": (layers, d, 3, c.heads, c.head_dim),
        "out": (layers, c.heads, c.head_dim, d),
        "norm2": (layers, d),
        "up": (layers, d, f),
        "down": (layers, f, d),
        "final_norm": (d,),
        "unembed": (d, c.vocab),
    }


def init_params(config: Config, seed: int = 0) -> dict[str, np.ndarray]:
    """Host (NumPy float32) parameters: norms at 1, matrices normal with standard deviation 1/sqrt(fan-in)."""
    rng = np.random.default_rng(seed)
    params = {}
    for name, shape in shapes(config).items():
        if "norm" in name:
            params[name] = np.ones(shape, np.float32)
        else:
            fan_in = shape[1] * shape[2] if name == "out" else shape[1] if name in ("qkv", "up", "down") else shape[0]
            scale = 0.02 if name in ("embed", "pos") else 1 / np.sqrt(fan_in)
            params[name] = (rng.normal(size=shape) * scale).astype(np.float32)
    return params


def place(tree: dict, mesh) -> dict:
    """Parameters (or Adam moments) stored on `mesh` as `RULES` says."""
    return {name: jax.device_put(a, NamedSharding(mesh, RULES[name])) for name, a in tree.items()}


def _norm(x, scale):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * scale


def _attention(h, qkv_w, out_w, batch):
    """Causal multi-head attention; heads split as the weights are (MODEL_PARALLEL), summed back into d_model."""
    q, k, v = jnp.einsum("btd,dshk->sbthk", h, qkv_w)  # one matmul: one all-reduce of its input's gradient
    scores = jnp.einsum("bqhk,bthk->bhqt", q, k) / math.sqrt(q.shape[-1])  # a Python float: keeps bf16 bf16
    seq = h.shape[1]
    scores = jnp.where(jnp.tril(jnp.ones((seq, seq), bool)), scores, -1e9)
    o = jnp.einsum("bhqt,bthk->bqhk", jax.nn.softmax(scores, axis=-1), v)
    return jnp.einsum("bqhk,hkd->bqd", o, out_w, out_sharding=P(batch))  # the all-reduce over MODEL_PARALLEL


def _mlp(h, up_w, down_w, batch):
    u = jax.nn.gelu(h @ up_w)  # (batch, seq, mlp * d_model), columns split over MODEL_PARALLEL
    return jnp.einsum("btf,fd->btd", u, down_w, out_sharding=P(batch))  # the all-reduce over MODEL_PARALLEL


def _use(params: dict, name: str):
    """A matrix as a matmul uses it: its FSDP shards gathered (the all-gather), its tensor split kept."""
    return jax.reshard(params[name], GATHERED[name])


def embed(params: dict, tokens):
    """The residual stream (batch, seq, d_model) of `tokens` (batch, seq) placed P(BATCH)."""
    x = _use(params, "embed").at[tokens].get(out_sharding=P(BATCH))
    return x + _use(params, "pos")[: tokens.shape[1]]


def block(params: dict, layer: int, x, batch=BATCH):
    """Layer `layer` of the stacked parameters: attention, then the MLP, each added to the residual stream.
    `batch`: the Explicit mesh axes that split `x`'s batch (inside a `shard_map` manual over DATA_PARALLEL,
    only FSDP is left)."""
    qkv = jax.reshard(params["qkv"][layer], GATHERED["qkv"])
    out = jax.reshard(params["out"][layer], GATHERED["out"])
    x = x + _attention(_norm(x, params["norm1"][layer]), qkv, out, batch)
    up = jax.reshard(params["up"][layer], GATHERED["up"])
    down = jax.reshard(params["down"][layer], GATHERED["down"])
    return x + _mlp(_norm(x, params["norm2"][layer]), up, down, batch)


def logits_of(params: dict, x):
    """The next character's logits (..., vocab) of the residual stream `x` after the last layer."""
    return _norm(x, params["final_norm"]) @ _use(params, "unembed")


def cross_entropy(logits, targets):
    """Mean cross-entropy of `targets` (ints) under `logits` (one more dimension, the vocabulary)."""
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))


def forward(params: dict, tokens):
    """Logits (batch, seq, vocab) of `tokens` (batch, seq) placed P(BATCH)."""
    x = embed(params, tokens)
    for layer in range(params["qkv"].shape[0]):
        x = block(params, layer, x)
    return logits_of(params, x)


def loss_fn(params: dict, window):
    """Mean cross-entropy of predicting each next character of `window` (batch, seq + 1)."""
    return cross_entropy(forward(params, window[:, :-1]), window[:, 1:])


OPTIMIZER = optax.adam(3e-3, b1=0.9, b2=0.99, eps=1e-8)  # Kingma and Ba, 2015


def train_step(params, state, window):
    """Loss, gradients (laid out like the parameters), one Adam update: (params, state, loss). Adam works
    element by element, so each shard of a parameter and of its two moments is updated where it is stored."""
    loss, grads = jax.value_and_grad(loss_fn)(params, window)
    updates, state = OPTIMIZER.update(grads, state, params)
    return optax.apply_updates(params, updates), state, loss


def sample(params, prompt: str, n: int, mesh, config: Config) -> str:
    """`n` characters after `prompt`, greedy: each step takes the likeliest next character."""
    ids = list(encode(prompt))
    step = jax.jit(lambda p, w: jnp.argmax(forward(p, w)[0, -1]))
    for _ in range(n):
        window = np.array(ids[-config.seq :], np.int32)
        window = np.pad(window, (config.seq - len(window), 0))[None]  # a full window: one compiled shape
        ids.append(int(step(params, jax.device_put(window, NamedSharding(mesh, P())))))
    return decode(ids)


LAYER_NAMES = ("norm1", "qkv", "out", "norm2", "up", "down")  # the stacked parameters, one slice per layer
RECORDED = Path(__file__).parent / "recorded"  # measurements on real accelerators, each with its provenance


def forward_scanned(params: dict, tokens, policy=None):
    """`forward` with its layers under `lax.scan` (one compiled layer, run `layers` times) and, when `policy`
    is given (e.g. `jax.checkpoint_policies.nothing_saveable`), each layer under `jax.checkpoint`: the
    backward pass recomputes what the policy does not let the forward pass save."""

    def layer(x, layer_params):
        return block({name: a[None] for name, a in layer_params.items()}, 0, x), None

    if policy is not None:
        layer = jax.checkpoint(layer, policy=policy)
    x, _ = jax.lax.scan(layer, embed(params, tokens), {name: params[name] for name in LAYER_NAMES})
    return logits_of(params, x)


def loss_scanned(params: dict, window, policy=None):
    """`loss_fn` of `forward_scanned`."""
    return cross_entropy(forward_scanned(params, window[:, :-1], policy), window[:, 1:])


def train_step_scanned(params, state, window, policy=None):
    """`train_step` of `loss_scanned`: the same update, the layers scanned (and rematerialized under `policy`)."""
    loss, grads = jax.value_and_grad(functools.partial(loss_scanned, policy=policy))(params, window)
    updates, state = OPTIMIZER.update(grads, state, params)
    return optax.apply_updates(params, updates), state, loss


def recorded_hlo(label: str, program: str) -> str:
    """A program's optimized HLO text as compiled for a TPU topology (`namedaxes/recorded/hlo-LABEL/`)."""
    with gzip.open(RECORDED / f"hlo-{label}" / f"{program}.hlo.gz", "rt", encoding="utf-8") as fh:
        return fh.read()


def recorded(name: str) -> dict:
    """A measurement recorded on a real accelerator (`namedaxes/recorded/NAME.json`): its provenance (chip,
    JAX version, date, command) and its figures."""
    return json.loads((RECORDED / f"{name}.json").read_text(encoding="utf-8"))


def hbm_bytes(config: Config, batch: int, params: int, layout: tuple = (1, 1, 1)) -> int:
    """Bytes one device's step moves through HBM outside the matmuls: layer norms, softmax, Adam.

    Per token and layer, the forward pass reads and writes the two layer norms' inputs and outputs (d_model
    wide) and the softmax's scores and probabilities (the device's heads × seq each); the backward pass reads
    them again and writes their gradients. Adam reads a parameter, its gradient and two moments and writes
    three of them back: 7 floats for each of the `params` parameters the device stores."""
    data, fsdp, tensor = layout
    tokens = batch * config.seq // (data * fsdp)  # one device's share of the batch
    floats = 10 * config.d_model + 5 * config.heads // tensor * config.seq  # per token and layer
    return 4 * tokens * config.layers * floats + 4 * 7 * params
