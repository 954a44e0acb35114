# nn.LSTM / GRU / RNN kept whole as one `rnn` node (python/kforge/recurrent.py), and the cases that still decompose.
import os
import sys

import pytest
import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.dirname(__file__))

from kforge import importer  # noqa: E402
from graph_executor import check_problem  # noqa: E402
from test_importer import ops_of, write_problem  # noqa: E402


def imported(tmp_path, init, forward, inputs, args="x", mode="eval"):
    path = write_problem(tmp_path, forward, inputs=inputs, init=init, args=args)
    return path, importer.import_problem(path, mode)


def rnn_nodes(g):
    return [n for n in g["nodes"] if n["op"] == "rnn"]


def test_lstm_multilayer_bidirectional_with_states(tmp_path):
    path, g = imported(tmp_path, "self.lstm = nn.LSTM(16, 32, num_layers=2, bidirectional=True)",
                       "out, (h, c) = self.lstm(x, (h0, c0))\nreturn out, h, c",
                       "torch.randn(7, 3, 16), torch.randn(4, 3, 32), torch.randn(4, 3, 32)", args="x, h0, c0")
    (n,) = rnn_nodes(g)
    assert n["attrs"] == {"mode": "lstm", "input_size": 16, "hidden_size": 32, "num_layers": 2, "bidirectional": True,
                          "batch_first": False, "has_biases": True}
    ids = {a["name"]: a["id"] for a in g["inputs"]}
    assert n["inputs"][:3] == [ids["x"], ids["h0"], ids["c0"]]
    # torch's _flat_weights order: per layer and direction w_ih, w_hh, b_ih, b_hh
    paths = {p["id"]: p["path"] for p in g["params"]}
    assert [paths[i] for i in n["inputs"][3:7]] == ["lstm.weight_ih_l0", "lstm.weight_hh_l0", "lstm.bias_ih_l0",
                                                    "lstm.bias_hh_l0"]
    assert [paths[i] for i in n["inputs"][7:11]] == ["lstm.weight_ih_l0_reverse", "lstm.weight_hh_l0_reverse",
                                                     "lstm.bias_ih_l0_reverse", "lstm.bias_hh_l0_reverse"]
    assert len(n["inputs"]) == 3 + 16
    assert n["shape"] == [7 * 3 * 64 + 2 * 4 * 3 * 32]
    # each result a slice of the packed output, reshaped
    assert ops_of(g).count("slice") == 3 and ops_of(g).count("reshape") == 3
    assert len(g["nodes"]) == 7  # not one node per time step
    check_problem(path, g)


def test_lstm_without_states_takes_zeros(tmp_path):
    path, g = imported(tmp_path, "self.lstm = nn.LSTM(8, 12)", "out, _ = self.lstm(x)\nreturn out",
                       "torch.randn(5, 2, 8)")
    (n,) = rnn_nodes(g)
    assert n["inputs"][1] is None and n["inputs"][2] is None  # cuDNN takes missing states as zeros
    assert "full" not in ops_of(g)
    check_problem(path, g)


def test_gru_bidirectional_batch_first(tmp_path):
    path, g = imported(tmp_path, "self.gru = nn.GRU(10, 6, num_layers=3, batch_first=True, bidirectional=True)",
                       "out, h = self.gru(x, h0)\nreturn out, h", "torch.randn(4, 9, 10), torch.randn(6, 4, 6)",
                       args="x, h0")
    (n,) = rnn_nodes(g)
    assert n["attrs"]["mode"] == "gru" and n["attrs"]["batch_first"] and n["attrs"]["num_layers"] == 3
    assert n["inputs"][2] is None  # no cell state
    assert n["shape"] == [4 * 9 * 12 + 6 * 4 * 6]
    check_problem(path, g)


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_rnn_modes(tmp_path, nonlinearity):
    path, g = imported(tmp_path, f"self.rnn = nn.RNN(5, 7, num_layers=2, nonlinearity='{nonlinearity}')",
                       "out, h = self.rnn(x)\nreturn out, h", "torch.randn(6, 3, 5)")
    (n,) = rnn_nodes(g)
    assert n["attrs"]["mode"] == f"rnn_{nonlinearity}"
    check_problem(path, g)


def test_lstm_batch_first_without_bias(tmp_path):
    path, g = imported(tmp_path, "self.lstm = nn.LSTM(6, 5, num_layers=2, batch_first=True, bias=False)",
                       "out, (h, c) = self.lstm(x)\nreturn out + 1, h, c", "torch.randn(3, 4, 6)")
    (n,) = rnn_nodes(g)
    assert n["attrs"]["has_biases"] is False and len(n["inputs"]) == 3 + 4
    check_problem(path, g)


def test_two_layers_in_a_row(tmp_path):
    path, g = imported(tmp_path, "self.a = nn.LSTM(4, 8, batch_first=True)\nself.b = nn.GRU(8, 3, batch_first=True)",
                       "y, _ = self.a(x)\nz, h = self.b(torch.relu(y))\nreturn z[:, -1], h", "torch.randn(2, 5, 4)")
    assert [n["attrs"]["mode"] for n in rnn_nodes(g)] == ["lstm", "gru"]
    check_problem(path, g)


@pytest.mark.parametrize("case", ["proj_size", "float64", "dropout_train"])
def test_fallbacks_still_import_by_decomposition(tmp_path, case):
    init, inputs, mode = "self.lstm = nn.LSTM(6, 8, num_layers=2)", "torch.randn(3, 2, 6)", "eval"
    if case == "proj_size":
        init = "self.lstm = nn.LSTM(6, 8, num_layers=2, proj_size=4)"
    elif case == "float64":
        init, inputs = init + "\nself.lstm.double()", "torch.randn(3, 2, 6, dtype=torch.float64)"
    else:
        init, mode = "self.lstm = nn.LSTM(6, 8, num_layers=2, dropout=0.5)", "train"
    path = write_problem(tmp_path, "out, (h, c) = self.lstm(x)\nreturn out, h, c", inputs=inputs, init=init)
    if case == "dropout_train":
        # dropout between layers in train mode draws random numbers: not kept whole, and the decomposition
        # refuses its bernoulli draw where it is used (as before this op existed)
        with pytest.raises(importer.UserError, match="bernoulli"):
            importer.import_problem(path, mode)
        g = importer.import_problem(path, "eval")  # the same module in eval mode: no dropout, kept whole
        assert len(rnn_nodes(g)) == 1
        return
    g = importer.import_problem(path, mode)
    assert not rnn_nodes(g)
    assert len(g["nodes"]) > 20  # one node per time step and gate
    check_problem(path, g, atol=1e-5 if case == "proj_size" else 1e-12)


ZOO = os.path.join(ROOT, "tests", "zoo")


@pytest.mark.parametrize("name,mode,results", [("lstm_multilayer_states", "lstm", 2), ("gru_bidirectional", "gru", 2)])
def test_zoo_recurrent_problems_keep_one_node(name, mode, results):
    path = os.path.join(ZOO, name + ".py")
    g = importer.import_problem(path)
    (n,) = rnn_nodes(g)
    assert n["attrs"]["mode"] == mode and n["attrs"]["batch_first"]
    assert len(g["outputs"]) == results
    assert len(g["nodes"]) <= 1 + 2 * 3
    check_problem(path, g, trials=1, atol=1e-5, rtol=1e-4)


def test_unbatched_input_is_kept_whole(tmp_path):
    path, g = imported(tmp_path, "self.lstm = nn.LSTM(6, 5)", "out, (h, c) = self.lstm(x)\nreturn out, h",
                       "torch.randn(4, 6)")
    (n,) = rnn_nodes(g)  # nn.LSTM hands _VF.lstm a batch of one
    assert n["shape"] == [4 * 5 + 5 + 5]
    check_problem(path, g)
