"""Model-zoo text pairs: Hugging Face transformers' BERT and GPT-2 (PyTorch) against their
MindSpore ports.

The MindSpore port of these models is mindone's ``mindone.transformers`` (0.5.0, which follows
transformers 4.57.1). Its models build on CPU and their parameter tables pair with
transformers' (``tests/test_zoo.py`` maps and copies them both ways), but they cannot run there:
they compute with ``mindspore.mint`` kernels that MindSpore 2.10 registers for Ascend only
(BERT's first op raises ``RuntimeError: The kernel Embedding unregistered``, GPT-2's
``The kernel Addmm unregistered``). So the forward passes compared here are the MindSpore
counterparts below, written with classic ``mindspore.ops``: the same Cells, attribute names,
parameter names and shapes as mindone's models (``tests/test_zoo.py`` holds them against
mindone's own tables), computing what transformers' eager attention computes.

The configurations are small (2 layers, hidden 64, 4 heads) with dropout probabilities 0.
"""

import mindspore as ms
import numpy as np
from mindspore import nn, ops

from .zoo_compat import import_quietly

TEXT = dict(
    vocab_size=100,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=128,
    max_position_embeddings=64,
)
GPT2 = dict(vocab_size=100, n_embd=64, n_layer=2, n_head=4, n_positions=64)


def bert_config():
    transformers = import_quietly("transformers")
    return transformers.BertConfig(
        **TEXT,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        return_dict=False,
        attn_implementation="eager",
    )


def gpt2_config():
    transformers = import_quietly("transformers")
    return transformers.GPT2Config(
        **GPT2,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        use_cache=False,
        return_dict=False,
        attn_implementation="eager",
    )


def torch_bert():
    """transformers' BertModel: returns (sequence output, pooled output)."""
    return import_quietly("transformers").BertModel(bert_config())


def torch_gpt2():
    """transformers' GPT2Model: returns (last hidden state,)."""
    return import_quietly("transformers").GPT2Model(gpt2_config())


def ms_bert():
    return BertModel(bert_config())


def ms_gpt2():
    return GPT2Model(gpt2_config())


def _parameter(shape, name, std=0.02):
    value = np.random.default_rng(0).normal(0.0, std, shape) if std else np.zeros(shape)
    return ms.Parameter(ms.Tensor(value.astype(np.float32)), name=name)


class Embedding(nn.Cell):
    """mindone's ``mint.nn.Embedding``: a ``weight`` table, rows gathered."""

    def __init__(self, num, dim):
        super().__init__()
        self.weight = _parameter((num, dim), "weight")

    def construct(self, ids):
        return ops.gather(self.weight, ids, 0)


class LayerNorm(nn.Cell):
    """mindone's ``mint.nn.LayerNorm``: ``weight`` and ``bias`` over the last axis."""

    def __init__(self, dim, eps):
        super().__init__()
        self.weight = ms.Parameter(ms.Tensor(np.ones(dim, np.float32)), name="weight")
        self.bias = ms.Parameter(ms.Tensor(np.zeros(dim, np.float32)), name="bias")
        self.norm = ops.LayerNorm(begin_norm_axis=-1, begin_params_axis=-1, epsilon=eps)

    def construct(self, x):
        return self.norm(x, self.weight, self.bias)[0]


def _heads(x, heads):
    b, n, c = x.shape
    return ops.transpose(ops.reshape(x, (b, n, heads, c // heads)), (0, 2, 1, 3))


def _merge(x):
    b, h, n, d = x.shape
    return ops.reshape(ops.transpose(x, (0, 2, 1, 3)), (b, n, h * d))


# -- BERT (mindone.transformers.BertModel's names) --------------------------------------------


class BertEmbeddings(nn.Cell):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = LayerNorm(config.hidden_size, config.layer_norm_eps)
        self.dropout = nn.Dropout(p=config.hidden_dropout_prob)

    def construct(self, input_ids):
        positions = ops.arange(input_ids.shape[1])[None]
        types = ops.zeros(input_ids.shape, ms.int32)
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(types) + self.position_embeddings(positions)
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(nn.Cell):
    def __init__(self, config):
        super().__init__()
        self.heads = config.num_attention_heads
        self.query = nn.Dense(config.hidden_size, config.hidden_size)
        self.key = nn.Dense(config.hidden_size, config.hidden_size)
        self.value = nn.Dense(config.hidden_size, config.hidden_size)
        self.dropout = nn.Dropout(p=config.attention_probs_dropout_prob)

    def construct(self, x):
        q, k, v = _heads(self.query(x), self.heads), _heads(self.key(x), self.heads), _heads(self.value(x), self.heads)
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) / float(np.sqrt(q.shape[-1]))
        return _merge(ops.matmul(self.dropout(ops.softmax(scores, axis=-1)), v))


class BertSelfOutput(nn.Cell):
    def __init__(self, config, dim_in):
        super().__init__()
        self.dense = nn.Dense(dim_in, config.hidden_size)
        self.LayerNorm = LayerNorm(config.hidden_size, config.layer_norm_eps)
        self.dropout = nn.Dropout(p=config.hidden_dropout_prob)

    def construct(self, x, residual):
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class BertAttention(nn.Cell):
    def __init__(self, config):
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config, config.hidden_size)

    def construct(self, x):
        return self.output(self.self(x), x)


class BertIntermediate(nn.Cell):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Dense(config.hidden_size, config.intermediate_size)

    def construct(self, x):
        return ops.gelu(self.dense(x), approximate="none")  # transformers' "gelu": exact


class BertLayer(nn.Cell):
    def __init__(self, config):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertSelfOutput(config, config.intermediate_size)

    def construct(self, x):
        attended = self.attention(x)
        return self.output(self.intermediate(attended), attended)


class BertEncoder(nn.Cell):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.CellList([BertLayer(config) for _ in range(config.num_hidden_layers)])

    def construct(self, x):
        for layer in self.layer:
            x = layer(x)
        return x


class BertPooler(nn.Cell):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Dense(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def construct(self, x):
        return self.activation(self.dense(x[:, 0]))


class BertModel(nn.Cell):
    def __init__(self, config):
        super().__init__()
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config)

    def construct(self, input_ids):
        sequence = self.encoder(self.embeddings(input_ids))
        return sequence, self.pooler(sequence)


# -- GPT-2 (mindone.transformers.GPT2Model's names) -------------------------------------------


class Conv1D(nn.Cell):
    """transformers' and mindone's Conv1D: ``x @ weight + bias``, the weight stored (in, out)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.weight = _parameter((nx, nf), "weight")
        self.bias = _parameter((nf,), "bias", std=0)

    def construct(self, x):
        return ops.matmul(x, self.weight) + self.bias


class GPT2Attention(nn.Cell):
    def __init__(self, config):
        super().__init__()
        self.heads = config.n_head
        self.c_attn = Conv1D(3 * config.n_embd, config.n_embd)
        self.c_proj = Conv1D(config.n_embd, config.n_embd)
        self.attn_dropout = nn.Dropout(p=config.attn_pdrop)
        self.resid_dropout = nn.Dropout(p=config.resid_pdrop)

    def construct(self, x):
        q, k, v = ops.split(self.c_attn(x), x.shape[-1], axis=-1)
        q, k, v = _heads(q, self.heads), _heads(k, self.heads), _heads(v, self.heads)
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) / float(np.sqrt(v.shape[-1]))
        n = x.shape[1]
        causal = ms.Tensor(np.tril(np.ones((n, n), np.bool_)))
        scores = ops.where(causal, scores, ms.Tensor(np.finfo(np.float32).min, ms.float32))
        attended = ops.matmul(self.attn_dropout(ops.softmax(scores, axis=-1)), v)
        return self.resid_dropout(self.c_proj(_merge(attended)))


class GPT2MLP(nn.Cell):
    def __init__(self, inner, config):
        super().__init__()
        self.c_fc = Conv1D(inner, config.n_embd)
        self.c_proj = Conv1D(config.n_embd, inner)
        self.dropout = nn.Dropout(p=config.resid_pdrop)

    def construct(self, x):
        return self.dropout(self.c_proj(ops.gelu(self.c_fc(x), approximate="tanh")))  # "gelu_new"


class GPT2Block(nn.Cell):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm((config.n_embd,), epsilon=config.layer_norm_epsilon)
        self.attn = GPT2Attention(config)
        self.ln_2 = nn.LayerNorm((config.n_embd,), epsilon=config.layer_norm_epsilon)
        self.mlp = GPT2MLP(config.n_inner or 4 * config.n_embd, config)

    def construct(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2Model(nn.Cell):
    def __init__(self, config):
        super().__init__()
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.n_positions, config.n_embd)
        self.drop = nn.Dropout(p=config.embd_pdrop)
        self.h = nn.CellList([GPT2Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm((config.n_embd,), epsilon=config.layer_norm_epsilon)

    def construct(self, input_ids):
        x = self.drop(self.wte(input_ids) + self.wpe(ops.arange(input_ids.shape[1])[None]))
        for block in self.h:
            x = block(x)
        return (self.ln_f(x),)
