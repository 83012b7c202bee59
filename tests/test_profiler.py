"""The profiler on programs with a known call structure, and on programs that misbehave."""

import os

import numpy as np
import pytest

from adcli.data import store
from adcli.engine.registry import REGISTRY
from adcli.fileio import OutputError
from adcli.profiler.api import NoGradientError, profile_program
from adcli.profiler.runner import ScriptError
from tests.support.node_clock import use_node_clock

SCRIPTS = os.path.join(os.path.dirname(__file__), "support", "scripts")


def script(name):
    return os.path.join(SCRIPTS, name)


def by_function(profile, function):
    return [s for s in profile["signatures"] if s["function"] == function]


def run(tmp_path, name, *argv, **options):
    out = str(tmp_path / "p.json")
    data, result = profile_program(script(name), list(argv), output=out, replay_budget=0.02, **options)
    assert store.load(out) == data  # what was returned is what was saved
    return data.to_json(), result, out


def nested(flat):
    """The flat call tree of a profile document as nested nodes with ``children``."""
    nodes = [{**n, "children": []} for n in flat]
    for n in nodes[1:]:
        nodes[n["parent"]]["children"].append(n)
    return nodes[0]


def load(path):
    return store.load(path).to_json()


def test_call_counts_are_exact(tmp_path):
    data, result, out = run(tmp_path, "known_calls.py")
    assert result.exit_status == 0 and data["totals"]["gradients"] == 2
    [outer] = by_function(data, "__main__.outer")
    [inner] = by_function(data, "__main__.inner")
    [kron] = by_function(data, "numpy.kron")
    assert (outer["calls"], inner["calls"], kron["calls"]) == (2, 6, 6)
    assert outer["signature"] == "__main__.outer(f64[2d])"
    assert kron["signature"] == "numpy.kron(f64[2d], f64[2d])" and kron["served_by"] == "derived"
    # the tree: program -> outer -> inner -> kron
    [o] = nested(data["tree"])["children"]
    [i] = o["children"]
    assert o["sig"] == outer["id"] and i["sig"] == inner["id"] and i["calls"] == 6
    assert kron["id"] in {c["sig"] for c in i["children"]}


def test_self_times_add_up_to_the_total(tmp_path):
    data, _, _ = run(tmp_path, "known_calls.py", replays=False)

    def self_sum(node, key):
        return node[f"self_{key}"] + sum(self_sum(c, key) for c in node["children"])

    root = nested(data["tree"])
    for key in ("forward_s", "reverse_s"):
        total = sum(c[key] for c in root["children"])
        assert self_sum(root, key) - root[f"self_{key}"] == pytest.approx(total, rel=0.10)
    assert data["totals"]["reverse_s"] >= root["children"][0]["reverse_s"]
    assert sum(c["primitives"] for c in root["children"]) > 0


def test_primitives_and_allocations_are_attributed(tmp_path):
    data, _, _ = run(tmp_path, "known_calls.py", replays=False)
    [inner] = by_function(data, "__main__.inner")
    [outer] = by_function(data, "__main__.outer")
    assert inner["primitives"] > 0 and outer["primitives"] >= inner["primitives"]
    count, nbytes = inner["allocs"]["forward"]
    assert count > 0 and nbytes >= 6 * 20 * 20 * 8  # six kron products of 20x20 float64 at least
    assert inner["allocs"]["reverse"][0] > 0


def test_replays_measure_derived_primal_and_imports(tmp_path):
    data, _, out = run(tmp_path, "known_calls.py")
    [kron] = by_function(data, "numpy.kron")
    r = kron["replay"]
    assert r["derived_s"] > 0 and r["primal_s"] > 0 and r["ratio"] == pytest.approx(r["derived_s"] / r["primal_s"])
    [imp] = r["imports"]
    assert imp["rule"] == "autograd numpy.kron" and imp["outcome"] == "agrees" and imp["rule_s"] > 0
    # the sample inputs are saved and load without pickles
    samples = store.load_samples(out)
    key = kron["sample"]["args"][0]["array"]
    assert samples[key].shape == (4, 5)
    assert not any(k for k in REGISTRY.get(np.kron).by_signature)  # the replay removed its import


def test_a_rule_that_serves_a_signature_is_shown(tmp_path):
    data, _, _ = run(tmp_path, "with_rule.py", rules=(script("with_rule_rules.py"),))
    [energy] = by_function(data, "__main__.energy")
    assert energy["served_by"] == "hand-written"
    assert energy["primitives"] == 1  # one rule node, not the derived body
    from adcli.rules import unregister

    unregister("__main__:energy")


def test_script_arguments_reach_the_script(tmp_path, capsys):
    data, result, _ = run(tmp_path, "argv.py", "--epochs", "3", "-v")
    assert "ARGV ['--epochs', '3', '-v']" in capsys.readouterr().out
    assert data["command"][1:] == ["--epochs", "3", "-v"]


def test_a_script_that_raises_still_writes_its_profile(tmp_path):
    data, result, out = run(tmp_path, "raises.py")
    assert result.exit_status == 1 and "ValueError: boom from the script" in result.error
    assert os.path.exists(out) and load(out)["exit_status"] == 1


def test_sys_exit_in_the_script(tmp_path):
    data, result, out = run(tmp_path, "exits.py")
    assert result.exit_status == 3 and load(out)["exit_status"] == 3


def test_interrupt_writes_a_partial_profile(tmp_path):
    data, result, out = run(tmp_path, "interrupted.py")
    assert result.interrupted and result.exit_status == 130
    assert load(out)["partial"] is True


def test_no_gradient_is_an_error_and_writes_nothing(tmp_path):
    with pytest.raises(NoGradientError, match="took no gradient"):
        run(tmp_path, "nograd.py")
    assert not os.path.exists(tmp_path / "p.json") and not os.path.exists(tmp_path / "p.npz")


def test_missing_script(tmp_path):
    with pytest.raises(ScriptError, match="no such script"):
        run(tmp_path, "does_not_exist.py")


def test_unwritable_output_fails_before_running(tmp_path, capsys):
    with pytest.raises(OutputError, match="cannot write"):
        profile_program(script("argv.py"), [], output=str(tmp_path / "missing" / "p.json"))
    assert "ARGV" not in capsys.readouterr().out  # the script never ran


def test_existing_output_needs_force(tmp_path):
    out = tmp_path / "p.json"
    out.write_text("precious")
    with pytest.raises(OutputError, match="--force"):
        profile_program(script("argv.py"), [], output=str(out))
    assert out.read_text() == "precious"
    profile_program(script("argv.py"), [], output=str(out), force=True, replays=False)
    assert load(str(out))["totals"]["gradients"] == 1


def _forget_helper():
    import sys

    sys.modules.pop("adcli_helpermod_for_tests", None)


def test_user_modules_next_to_the_script_are_profiled_unless_excluded(tmp_path):
    _forget_helper()
    data, _, _ = run(tmp_path, "uses_helper.py", replays=False)
    assert [s["signature"] for s in by_function(data, "adcli_helpermod_for_tests.smooth")] == [
        "adcli_helpermod_for_tests.smooth(f64[1d])"]
    _forget_helper()
    out = str(tmp_path / "q.json")
    data, _ = profile_program(script("uses_helper.py"), [], output=out, replays=False,
                              exclude=("*adcli_helpermod_for_tests.py",))
    assert not by_function(data.to_json(), "adcli_helpermod_for_tests.smooth")
    _forget_helper()


def test_interrupt_during_the_replays_writes_a_partial_profile(tmp_path, monkeypatch):
    from adcli.profiler import replay

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(replay, "replay", interrupted)
    data, result, out = run(tmp_path, "known_calls.py")
    assert result.exit_status == 130 and result.interrupted  # as Ctrl-C anywhere else
    assert load(out)["partial"] is True and load(out)["exit_status"] == 130


def test_no_garbage_collection_inside_a_timed_gradient(tmp_path):
    # A full collection in a large process takes ~100 ms: charged to whichever call it hit, it
    # would swamp a 10 ms gradient. The script exits 3 unless GC was off inside and on after.
    import gc

    assert gc.isenabled()
    _, result, _ = run(tmp_path, "gc_state.py", replays=False)
    assert result.exit_status == 0
    assert gc.isenabled()



def test_replays_run_with_blas_pinned_to_one_thread(tmp_path):
    from threadpoolctl import threadpool_limits

    log = tmp_path / "threads.log"
    with threadpool_limits(2):  # the program itself runs with the pool it was given
        data, _, _ = run(tmp_path, "blas_threads.py", str(log))
    [model] = by_function(data, "__main__.model")
    assert model["replay"]["derived_s"] > 0
    counts = [int(n) for n in log.read_text().split()]
    if counts[0] < 2:
        pytest.fail(f"this machine's BLAS has no pool of 2 threads to pin ({counts[0]}): the test cannot tell")
    assert counts[0] == 2 and len(counts) > 1 and set(counts[1:]) == {1}


def test_replays_measure_each_candidate_in_the_program(tmp_path, monkeypatch):
    """The gradients of the function handed to grad (outer, 2 calls) are timed as served, with
    kron's library rule imported, and with a minimal rule for each derived signature; seconds
    per run, and the registry is left as it was. Timed on a clock that counts tape nodes, so
    what each candidate runs is compared, not how a shared machine's load fell."""
    use_node_clock(monkeypatch)
    data, _, out = run(tmp_path, "known_calls.py")
    [kron] = by_function(data, "numpy.kron")
    [inner] = by_function(data, "__main__.inner")
    [outer] = by_function(data, "__main__.outer")
    one_gradient = outer["replay"]["derived_s"]  # one gradient of outer, as the run served it
    assert one_gradient > 1 + 3 * 3  # three inner calls, each a kron, a sin and a sum at least
    for s in (kron, inner, outer):
        r = s["replay"]
        assert r["program_s"] > 0 and r["program_floor_s"] > 0
        # two gradients of outer per run: each program time is twice one gradient of outer
        assert r["program_s"] == 2 * one_gradient
        # a minimal rule leaves the signature's own reverse pass out: fewer nodes in each gradient
        assert r["program_floor_s"] < r["program_s"]
    assert 0 < kron["replay"]["program_import_s"] <= kron["replay"]["program_s"]  # one node for kron, too
    assert inner["replay"]["program_import_s"] is None  # a user function: no library rule
    # a minimal rule for inner leaves kron and inner's own body out: less than one for kron does
    assert inner["replay"]["program_floor_s"] < kron["replay"]["program_floor_s"]
    assert not any(k for k in REGISTRY.get(np.kron).by_signature)
    assert not REGISTRY.get(("__main__", "inner")) or not REGISTRY[("__main__", "inner")].by_signature


def test_a_signature_whose_output_no_rule_returns_gets_no_floor(tmp_path, monkeypatch):
    from adcli.profiler import replay

    # every signature replayed: which ones cover 95% of the time is a timing of a busy machine's
    choose = replay.choose
    monkeypatch.setattr(replay, "choose", lambda profile: choose(profile, coverage=1.0))
    (tmp_path / "listy.py").write_text(
        "import numpy as np\nimport adcli\n\n"
        "def parts(x):\n    return [np.sin(x), np.cos(x)]\n\n"
        "def f(x):\n    a, b = parts(x)\n    return np.sum(a * b)\n\n"
        "adcli.grad(f)(np.linspace(0.0, 1.0, 50))\n")
    out = str(tmp_path / "p.json")
    data, _ = profile_program(str(tmp_path / "listy.py"), [], output=out, replay_budget=0.01)
    [parts] = [s for s in data.signatures if s.function == "__main__.parts"]
    assert parts.output == "list" and parts.replay.program_s > 0 and parts.replay.program_floor_s is None


def test_a_function_called_with_other_arguments_traced_gets_its_what_if(monkeypatch):
    """A VAE's network runs on its data (plain) and then on traced latents: the minimal rule
    built from the first call's sample must serve the second too (a zero cotangent, made only if
    traced), else the what-if fails and the advice falls back on the replay alone (which for the
    corpus's VAE predicted a 36% saving where a rule saves nothing)."""
    import tempfile

    from adcli.profiler import replay

    choose = replay.choose
    monkeypatch.setattr(replay, "choose", lambda profile: choose(profile, coverage=1.0))
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "twice.py")
        with open(script, "w") as f:
            f.write("import numpy as np\nimport adcli\n\n"
                    "def net(w, x):\n    return np.tanh(x @ w)\n\n"
                    "def f(w, v, data):\n    z = net(w, data)\n    return np.sum(net(v, z))\n\n"
                    "rng = np.random.default_rng(0)\n"
                    "adcli.grad(f, argnums=(0, 1))(rng.standard_normal((4, 4)), rng.standard_normal((4, 4)), "
                    "rng.standard_normal((8, 4)))\n")
        data, _ = profile_program(script, [], output=os.path.join(tmp, "p.json"), replay_budget=0.01)
    [net] = [s for s in data.signatures if s.function == "__main__.net"]
    assert net.calls == 2 and net.replay.program_s > 0 and net.replay.program_floor_s > 0
    assert list(net.traced) == [0, 1]  # its data plain in the first call, traced latents in the second
