def f(x:
    return torch.softmax(x, dim=-1) @ (
'''