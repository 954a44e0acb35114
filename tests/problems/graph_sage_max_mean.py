# A two-layer GraphSAGE-style network over a random graph: each edge's message (a Linear of its source node, ReLU)
# is aggregated onto its target node by max (scatter_reduce 'amax', include_self=False: a node no edge reaches
# keeps 0) and by mean (index_reduce 'mean'), then combined with the node's own features; a max over the nodes
# reads out the graph. The edge list is an input, as graph libraries pass it.
import torch
import torch.nn as nn


class SageLayer(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.msg = nn.Linear(d_in, d_out)
        self.self_lin = nn.Linear(d_in, d_out)
        self.max_lin = nn.Linear(d_out, d_out, bias=False)

    def forward(self, x, edge_index):
        src, dst = edge_index[0], edge_index[1]
        m = torch.relu(self.msg(x[src]))
        n, d = x.shape[0], m.shape[1]
        agg_max = torch.zeros(n, d, dtype=x.dtype, device=x.device).scatter_reduce(
            0, dst.unsqueeze(-1).expand(-1, d), m, reduce="amax", include_self=False)
        agg_mean = torch.zeros(n, d, dtype=x.dtype, device=x.device).index_reduce(
            0, dst, m, "mean", include_self=False)
        return torch.relu(self.self_lin(x) + self.max_lin(agg_max) + agg_mean)


class Model(nn.Module):
    def __init__(self, d_in, d_hidden, n_classes):
        super().__init__()
        self.l1 = SageLayer(d_in, d_hidden)
        self.l2 = SageLayer(d_hidden, d_hidden)
        self.head = nn.Linear(d_hidden, n_classes)

    def forward(self, x, edge_index):
        h = self.l2(self.l1(x, edge_index), edge_index)
        return self.head(h.amax(dim=0, keepdim=True))


def get_inputs():
    return [torch.randn(2048, 64), torch.randint(0, 2048, (2, 16384))]


def get_init_inputs():
    return [64, 128, 10]
