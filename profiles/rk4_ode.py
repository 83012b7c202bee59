"""Parameter fitting for the Lotka-Volterra predator-prey ODE
``u0' = a u0 - b u0 u1, u1' = d u0 u1 - g u1`` integrated with classic fourth-order Runge-Kutta in
a Python time-step loop (100 steps of 0.1), loss = sum of squared errors of the stacked trajectory
against a fixed target trajectory (made with other parameters plus noise, fixed seed). Not part
of Mooncake's suite: a realistic model with a long chain of small operations; gradient with
respect to the parameters theta = (a, b, d, g) and the initial state."""
import numpy as np

import adcli

NAME = "rk4_ode"
ARGNUMS = (0, 1)

STEPS = 100
DT = 0.1


def dynamics(u, theta):
    prey, pred = u[0], u[1]
    a, b, d, g = theta[0], theta[1], theta[2], theta[3]
    return np.stack([a * prey - b * prey * pred, d * prey * pred - g * pred])


def rk4_step(u, theta, dt):
    k1 = dynamics(u, theta)
    k2 = dynamics(u + 0.5 * dt * k1, theta)
    k3 = dynamics(u + 0.5 * dt * k2, theta)
    k4 = dynamics(u + dt * k3, theta)
    return u + (dt / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def simulate(theta, u0):
    states = [u0]
    u = u0
    for _ in range(STEPS):
        u = rk4_step(u, theta, DT)
        states.append(u)
    return np.stack(states)


def f(theta, u0, target):
    return np.sum((simulate(theta, u0) - target) ** 2)


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    theta_true = np.array([1.1, 0.4, 0.1, 0.4])
    u0_true = np.array([10.0, 5.0])
    target = simulate(theta_true, u0_true) + 0.1 * rng.standard_normal((STEPS + 1, 2))
    theta = np.array([1.0, 0.45, 0.11, 0.42])
    u0 = np.array([9.5, 5.2])
    return theta, u0, target


def main():
    args = inputs()
    value, grads = adcli.value_and_grad(f, argnums=ARGNUMS)(*args)
    print(f"{NAME}: value = {float(value):.6f}")
    print(f"  grad theta: {np.array2string(grads[0], precision=4)}")
    print(f"  grad u0:    {np.array2string(grads[1], precision=4)}")


if __name__ == "__main__":
    main()
