"""fake_quant_bf16: a fake quantization of bf16 activations, round(x / s) * s with a step s = 0.3 (a step function of
the inputs: an honest kernel computing x / s in fp32 rounds the other way wherever the float64 quotient is within
fp32's rounding of a half, a whole step off on ~0.1% of the elements). Used by tests/test_redteam_round10_args.py (the gross bound grows where the truth moves with its inputs);
through the whole ladder such a kernel still fails PSNR and cosine on small or uniform inputs, rules of their own."""
import torch


def generate_input(seed: int, n: int):
    return torch.randn(n, dtype=torch.bfloat16), 0.3


def ref_kernel(data):
    x, s = data
    return torch.round(x / s) * s


tests = [{"n": n} for n in (16384, 16385, 65536, 65537)]
fuzz = {"n": (16384, 1 << 18)}
