"""Recurrent layers: gate order (LSTM i,f,g,o; GRU r,z,n), num_layers, bidirectional,
batch_first, bias and initial states. Outputs compared: the sequence and the final states."""

from parity import TRANSLATE, ParityCase, randn

SEQ = randn((5, 2, 4))  # (time, batch, features)
BATCH_FIRST = randn((2, 5, 4))

RNN = ParityCase(
    "RNN", mindspore=TRANSLATE, torch="torch.nn:RNN", torch_kwargs={"input_size": 4, "hidden_size": 3}, inputs=SEQ
)
RNN_relu_two_layers_state = ParityCase(
    "RNN_relu_two_layers_state",
    mindspore=TRANSLATE,
    torch="torch.nn:RNN",
    torch_kwargs={"input_size": 4, "hidden_size": 3, "num_layers": 2, "nonlinearity": "relu"},
    inputs=(SEQ, randn((2, 2, 3))),
)
RNN_bidirectional_batch_first = ParityCase(
    "RNN_bidirectional_batch_first",
    mindspore=TRANSLATE,
    torch="torch.nn:RNN",
    torch_kwargs={"input_size": 4, "hidden_size": 3, "bidirectional": True, "batch_first": True},
    inputs=BATCH_FIRST,
)

LSTM = ParityCase(
    "LSTM", mindspore=TRANSLATE, torch="torch.nn:LSTM", torch_kwargs={"input_size": 4, "hidden_size": 3}, inputs=SEQ
)
LSTM_bidirectional_two_layers_batch_first = ParityCase(
    "LSTM_bidirectional_two_layers_batch_first",
    mindspore=TRANSLATE,
    torch="torch.nn:LSTM",
    torch_kwargs={"input_size": 4, "hidden_size": 3, "num_layers": 2, "bidirectional": True, "batch_first": True},
    inputs=BATCH_FIRST,
)
LSTM_no_bias = ParityCase(
    "LSTM_no_bias",
    mindspore=TRANSLATE,
    torch="torch.nn:LSTM",
    torch_kwargs={"input_size": 4, "hidden_size": 3, "bias": False},
    inputs=SEQ,
)
LSTM_initial_state = ParityCase(
    "LSTM_initial_state",
    mindspore=TRANSLATE,
    torch="cases.translated.models:LSTMWithState",
    torch_kwargs={"input_size": 4, "hidden_size": 3, "num_layers": 2},
    inputs=(SEQ, randn((2, 2, 3)), randn((2, 2, 3))),
)
LSTM_proj_size = ParityCase(
    "LSTM_proj_size",
    mindspore=TRANSLATE,
    torch="torch.nn:LSTM",
    torch_kwargs={"input_size": 4, "hidden_size": 3, "proj_size": 2},
    inputs=SEQ,
    xfail="nn.LSTM has no proj_size (projected hidden state)",
)

GRU = ParityCase(
    "GRU", mindspore=TRANSLATE, torch="torch.nn:GRU", torch_kwargs={"input_size": 4, "hidden_size": 3}, inputs=SEQ
)
GRU_bidirectional_batch_first_state = ParityCase(
    "GRU_bidirectional_batch_first_state",
    mindspore=TRANSLATE,
    torch="torch.nn:GRU",
    torch_kwargs={"input_size": 4, "hidden_size": 3, "bidirectional": True, "batch_first": True},
    inputs=(BATCH_FIRST, randn((2, 2, 3))),
)
GRU_no_bias_two_layers = ParityCase(
    "GRU_no_bias_two_layers",
    mindspore=TRANSLATE,
    torch="torch.nn:GRU",
    torch_kwargs={"input_size": 4, "hidden_size": 3, "num_layers": 2, "bias": False},
    inputs=SEQ,
)
