# A bidirectional LSTM whose initial states are plain tensor attributes drawn in __init__ and moved in forward
# (self.h0 = self.h0.to(x.device)), the way many RNN examples keep them; the classifier reads the last step.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, output_size, dropout=0.0):
        super().__init__()
        self.h0 = torch.randn((num_layers * 2, 10, hidden_size))
        self.c0 = torch.randn((num_layers * 2, 10, hidden_size))
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, dropout=dropout, bidirectional=True)
        self.fc = nn.Linear(hidden_size * 2, output_size)

    def forward(self, x):
        self.h0 = self.h0.to(x.device)
        self.c0 = self.c0.to(x.device)
        out, _ = self.lstm(x, (self.h0, self.c0))
        out = self.fc(out[:, -1, :])
        return out


def get_inputs():
    return [torch.randn(10, 32, 64)]


def get_init_inputs():
    return [64, 128, 2, 10]
