# Generates the expected values hard-coded in tests/nn/rnn_test.cpp (run with PyTorch 2.x):
#   python tests/nn/rnn_expected.py
# Parameters are filled in named_parameters() order: parameter p, element k (row-major) gets
# 0.3 * sin(0.1 * k + p). Inputs: x[k] = cos(0.05 * k + 0.3); states h[k] = 0.2 * sin(0.3 * k),
# c[k] = 0.1 * cos(0.2 * k). Loss = sum(output * pattern(output)) + sum(h_n * pattern(h_n))
# (+ sum(c_n * pattern(c_n))) with pattern(t)[k] = sin(0.7 * k + 1).
import math
import torch

torch.set_default_dtype(torch.float64)


def fill(t, f):
    with torch.no_grad():
        flat = torch.tensor([f(k) for k in range(t.numel())]).view(t.shape)
        t.copy_(flat)


def pattern(t):
    return torch.tensor([math.sin(0.7 * k + 1) for k in range(t.numel())]).view(t.shape)


def arr(name, t):
    vals = ", ".join("%.12g" % v for v in t.detach().reshape(-1).tolist())
    print("const std::vector<double> %s = {%s};" % (name, vals))


def run(tag, m, x_shape, with_state, lstm):
    for p, (n, w) in enumerate(m.named_parameters()):
        fill(w, lambda k, p=p: 0.3 * math.sin(0.1 * k + p))
    x = torch.empty(x_shape)
    fill(x, lambda k: math.cos(0.05 * k + 0.3))
    x.requires_grad_(True)
    d = 2 if m.bidirectional else 1
    batched = len(x_shape) == 3
    n = x_shape[0 if m.batch_first else 1] if batched else None
    real = m.proj_size if getattr(m, "proj_size", 0) else m.hidden_size
    hx = None
    if with_state:
        hs = (m.num_layers * d, n, real) if batched else (m.num_layers * d, real)
        cs = (m.num_layers * d, n, m.hidden_size) if batched else (m.num_layers * d, m.hidden_size)
        h0 = torch.empty(hs)
        fill(h0, lambda k: 0.2 * math.sin(0.3 * k))
        if lstm:
            c0 = torch.empty(cs)
            fill(c0, lambda k: 0.1 * math.cos(0.2 * k))
            hx = (h0, c0)
        else:
            hx = h0
    out, state = m(x, hx)
    loss = (out * pattern(out)).sum()
    if lstm:
        loss = loss + (state[0] * pattern(state[0])).sum() + (state[1] * pattern(state[1])).sum()
    else:
        loss = loss + (state * pattern(state)).sum()
    loss.backward()
    print("// ---- %s ----" % tag)
    arr(tag + "_output", out)
    if lstm:
        arr(tag + "_h_n", state[0])
        arr(tag + "_c_n", state[1])
    else:
        arr(tag + "_h_n", state)
    arr(tag + "_grad_x", x.grad)
    names = []
    sums = []
    for n_, w in m.named_parameters():
        names.append('"%s"' % n_)
        sums.append(w.grad.sum().item())
        sums.append((w.grad * pattern(w.grad)).sum().item())
    print("const std::vector<std::string> %s_names = {%s};" % (tag, ", ".join(names)))
    print("const std::vector<double> %s_grad_sums = {%s};" % (tag, ", ".join("%.12g" % v for v in sums)))


run("lstm", torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True), (3, 2, 3), True, True)
run("gru", torch.nn.GRU(3, 4, num_layers=2, bidirectional=True), (3, 2, 3), True, False)
run("lstm_proj", torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2,
                               batch_first=True), (2, 3, 3), False, True)
run("rnn_relu", torch.nn.RNN(3, 4, num_layers=2, nonlinearity="relu", bias=False), (3, 3), True,
    False)
