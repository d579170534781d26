"""An int8 copy: every byte value occurs, 90 (0x5A, the byte of ktui's integer poison) among them."""

import torch


def generate_input(seed: int, n: int) -> torch.Tensor:
    x = torch.randint(-128, 128, (n,), dtype=torch.int8)
    x[:: max(1, n // 7)] = 90  # the poison byte's value, on purpose
    return x


def ref_kernel(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


tests = [{"n": n} for n in (1, 129, 1025, 4099)]
