"""Gradients from four threads at once (the profiler must keep each thread's calls apart)."""
import threading

import numpy as np

import adcli


def inner(x):
    return np.sum(np.sin(x) * x)


def loss(x):
    return inner(x) + np.sum(x ** 2)


errors = []


def work(seed):
    x = np.random.default_rng(seed).standard_normal(20)
    for _ in range(50):
        try:
            g = adcli.grad(loss)(x)
            expected = np.sin(x) + x * np.cos(x) + 2 * x
            if not np.allclose(g, expected):
                errors.append("wrong gradient")
        except Exception as exc:  # noqa: BLE001
            errors.append(f"{type(exc).__name__}: {exc}")


threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"ERRORS {len(errors)}", errors[:3])
raise SystemExit(3 if errors else 0)
