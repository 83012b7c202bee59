"""Which of autograd's tests are in scope, and why a failing one failed.

Scope is "real values, reverse mode, first order". A test is excluded, with a category, when

1. the table ``EXCLUDED`` below names it (decided by reading autograd 1.9.1's test files: the
   test's subject is complex numbers, forward mode, higher-order derivatives, autograd's own
   machinery, or an autograd function that NumPy/SciPy do not have);
2. the test skipped itself (e.g. it needs xarray);
3. it met a feature the shim refuses as out of scope (``ShimUnsupported``) before doing any
   in-scope work; if it had already passed in-scope checks it stays in scope as a *partial*
   pass (the part before the refusal passed);
4. every gradient check it asked for was skipped (all complex, or all nested differentiation).

Inside in-scope tests the shim reduces checks (order 2 to 1, 'fwd' to reverse) and skips complex
and nested-differentiation cases; those are counted per test, never silent.
"""

from __future__ import annotations

import re

COMPLEX = "complex numbers"
FORWARD = "forward mode"
HIGHER = "higher-order"
INTERNALS = "autograd internals"
AUTOGRAD_ONLY = "autograd-only API"
SHIM = "shim limitation"

# test file -> {test name (without parameters) or "*": (category, why)}
EXCLUDED: dict[str, dict[str, tuple[str, str]]] = {
    "test_builtins.py": {"*": (INTERNALS, "autograd.builtins.isinstance on boxes")},
    "test_complex.py": {  # test_angle_real and test_abs_real have real inputs: in scope
        "test_real_type": (COMPLEX, "gradient type for real and complex inputs"),
        "test_real_if_close_type": (COMPLEX, "gradient type for real and complex inputs"),
        "test_angle_complex": (COMPLEX, "complex input"),
        "test_abs_complex": (COMPLEX, "complex input"),
    },
    "test_core.py": {"*": (INTERNALS, "autograd.core.make_vjp with wrap_util.unary_to_nary")},
    "test_vspaces.py": {"*": (INTERNALS, "autograd's vector spaces")},
    "test_tests.py": {"*": (INTERNALS, "autograd's own checker with user-defined primitives")},
    "test_misc.py": {"*": (INTERNALS, "autograd.misc.const_graph / flatten, tracer.primitive")},
    "test_dict.py": {
        "test_make_dict": (INTERNALS, "autograd.dict container constructor"),
        "test_isinstance": (INTERNALS, "autograd.isinstance on boxed dicts"),
    },
    "test_list.py": {
        "test_make_list": (INTERNALS, "autograd.list container constructor"),
        "test_isinstance": (INTERNALS, "autograd.isinstance on boxed lists"),
    },
    "test_tuple.py": {
        "test_nested_higher_order": (HIGHER, "grad of grad of a function calling grad"),
        "test_isinstance": (INTERNALS, "autograd.isinstance on boxed tuples"),
    },
    "test_direct.py": {
        "test_deriv": (FORWARD, "autograd.deriv"),
        "test_grad_complex_output": (COMPLEX, "grad of a complex-valued function must raise"),
        "test_holomorphic_grad": (COMPLEX, "holomorphic_grad"),
    },
    "test_fft.py": {
        name: (COMPLEX, "FFTs have complex outputs or inputs")
        for name in (
            "test_fft test_fft_ortho test_fft_axis test_fft_n_smaller test_fft_n_bigger test_ifft_n_smaller "
            "test_ifft_n_bigger test_rfft_n_smaller test_rfft_n_bigger test_irfft_n_smaller test_irfft_n_bigger "
            "test_fft2_s test_ifft2_s test_fftn_s test_ifftn_s test_rfft2_s test_irfft2_s test_rfftn_s test_irfftn_s "
            "test_ifft test_fft2 test_ifft2 test_fftn test_ifftn test_rfft test_rfft_ortho test_rfft_axes test_irfft "
            "test_irfft_ortho test_rfft2 test_irfft2 test_rfftn test_rfftn_odd_not_implemented test_rfftn_subset "
            "test_rfftn_axes test_irfftn test_irfftn_subset"
        ).split()
    },
    "test_graphs.py": {
        "test_grad_identity": (HIGHER, "grad(grad(f))"),
        "test_hess_vector_prod": (HIGHER, "Hessian-vector product through grad"),
        "test_enclosing_scope_ref": (HIGHER, "grad inside the differentiated function, closing over its input"),
        "test_enclosing_scope_ref_2": (HIGHER, "grad inside the differentiated function, closing over its input"),
        "test_third_derivative": (HIGHER, "checks of grad and grad of grad"),
        "test_third_derivative_other_args": (HIGHER, "checks of grad and grad of grad"),
        "test_third_derivative_other_args2": (HIGHER, "checks of grad and grad of grad"),
        "test_complex_mutating_outgrad_from_indexing": (COMPLEX, "complex intermediates (a + 1j)"),
        "test_complex_separate_real_and_imaginary": (COMPLEX, "complex input"),
    },
    "test_jacobian.py": {
        "test_jacobian_higher_order": (HIGHER, "jacobian of jacobian"),
        "test_jacobian_against_stacked_grads": (HIGHER, "jacobian of a function that calls grad"),
    },
    "test_linalg.py": {
        "test_eig_real": (COMPLEX, "np.linalg.eig of a real matrix has complex eigenpairs"),
        "test_eig_complex": (COMPLEX, "complex input"),
        "test_eig_batched": (COMPLEX, "complex input"),
        **{
            name: (COMPLEX, "complex input")
            for name in (
                "test_vector_2norm_complex test_frobenius_norm_complex test_frobenius_norm_axis_complex "
                "test_vector_norm_ord_complex test_norm_axis_complex test_norm_nuclear_complex "
                "test_norm_nuclear_axis_complex test_eigvalh_lower_complex test_eigvalh_upper_complex "
                "test_svd_wide_2d_complex test_svd_wide_3d_complex test_svd_square_2d_complex "
                "test_svd_square_3d_complex test_svd_tall_2d_complex test_svd_tall_3d_complex "
                "test_svd_only_s_2d_complex test_svd_only_s_3d_complex"
            ).split()
        },
    },
    "test_logic.py": {
        "test_no_vjp_def": (INTERNALS, "a primitive without a VJP must raise"),
        "test_no_jvp_def": (FORWARD, "a primitive without a JVP must raise (deriv)"),
        "test_unimplemented_falseyness": (INTERNALS, "edits autograd.core.primitive_vjps"),
    },
    "test_numpy.py": {"test_numpy_version": (INTERNALS, "autograd.numpy's version attribute")},
    "test_performance.py": {
        "test_list_creation": (FORWARD, "deriv of autograd.builtins.list"),
        "test_array_creation_fwd": (FORWARD, "deriv"),
    },
    "test_scipy.py": {
        "test_convolve_generalization": (AUTOGRAD_ONLY, "autograd's convolve(axes=, dot_axes=)"),
        "test_convolve_ignore": (AUTOGRAD_ONLY, "autograd's convolve(axes=)"),
        "test_convolve_ignore_dot": (AUTOGRAD_ONLY, "autograd's convolve(axes=, dot_axes=)"),
    },
    "test_wrappers.py": {
        **{
            name: (HIGHER, "Hessians")
            for name in (
                "test_hessian test_hessian_tensor_product test_hvp test_hessian_matrix_product "
                "test_hessian_tensor_product_3d test_make_ggnvp test_make_ggnvp_nondefault_g"
            ).split()
        },
        "test_make_jvp": (FORWARD, "make_jvp"),
        **{
            name: (INTERNALS, "autograd.core.primitive's deprecated rule API")
            for name in (
                "test_deprecated_defgrad_wrapper test_deprecated_defvjp_wrapper test_deprecated_defvjp_is_zero_wrapper"
            ).split()
        },
        "test_deprecated_quick_grad_check_wrapper": (INTERNALS, "autograd.util.quick_grad_check"),
        "test_wrapped_name_and_docs": (INTERNALS, "wrap_util's names and docstrings of grad"),
        "test_custom_where_dtypes": (AUTOGRAD_ONLY, "autograd.numpy.where's Python-scalar results (no differentiation)"),
        "test_custom_where": (AUTOGRAD_ONLY, "autograd.numpy.where's keyword arguments (no differentiation)"),
    },
}

OUT_OF_SCOPE = {COMPLEX, FORWARD, HIGHER, INTERNALS, AUTOGRAD_ONLY}


def static_exclusion(nodeid: str):
    """(category, why) from the table, or None."""
    path, _, name = nodeid.partition("::")
    table = EXCLUDED.get(path.rsplit("/", 1)[-1], {})
    return table.get(name.split("[", 1)[0]) or table.get("*")


def classify(rec: dict) -> dict:
    """Add ``status`` (pass, partial, fail, excluded) and ``category`` / ``cause`` / ``notes`` to a record."""
    rec = dict(rec)
    events, stats = rec.get("events") or [], rec.get("stats") or {}
    work = stats.get("ok", 0) + stats.get("checks", 0)
    rec["notes"] = _notes(events)
    static = static_exclusion(rec["nodeid"])
    refused = [e for e in events if e["kind"] == "unsupported"]
    skipped = [e for e in events if e["kind"] == "skipped"]
    if rec.get("kind") == "collect":
        return {**rec, "status": "fail", "cause": "collection error: " + rec.get("message", "")}
    if static:
        return {**rec, "status": "excluded", "category": static[0], "why": static[1]}
    if rec["outcome"] == "skipped":
        return {**rec, "status": "excluded", "category": "skipped by the test", "why": rec.get("skip_reason", "")}
    ended_by_shim = rec["outcome"] in ("failed", "error") and "ShimUnsupported" in (rec.get("exc_bases") or [])
    if refused and (rec["outcome"] == "passed" or ended_by_shim):
        first = refused[0]
        if first["category"] not in OUT_OF_SCOPE:
            return {**rec, "status": "fail", "cause": f"{SHIM}: {first['what']}"}
        if work:
            return {**rec, "status": "partial", "why": f"stopped at {first['what']} [{first['category']}]"}
        return {**rec, "status": "excluded", "category": first["category"], "why": f"at run time: {first['what']}"}
    if rec["outcome"] == "passed" and not work and skipped:
        cats = sorted({COMPLEX if "complex" in e["what"] else HIGHER for e in skipped})
        return {**rec, "status": "excluded", "category": cats[0], "why": "at run time: every gradient check was skipped"}
    if rec["outcome"] == "passed":
        return {**rec, "status": "pass"}
    known = KNOWN.get(rec["nodeid"])
    if known and re.search(known[0], rec.get("message") or ""):
        return {**rec, "status": "fail", "cause": known[1]}
    return {**rec, "status": "fail", "cause": cause(rec)}


def _notes(events) -> str:
    counts: dict[str, int] = {}
    for e in events:
        if e["kind"] in ("reduced", "skipped"):
            what = e["what"] if e["kind"] == "reduced" else f"skipped {e['what']}"
            counts[what] = counts.get(what, 0) + 1
    return "; ".join(f"{n}x {what}" for what, n in counts.items())


LIST_ARG = "Python list of traced values given to a NumPy function other than the np.array family"

# Causes read off particular failures (by reading the test and adcli's message). Each applies only
# while the failure's message still matches its pattern; otherwise the automatic cause is used.
KNOWN = {
    "test_numpy.py::test_mean_list_of_boxes": (r"np\.mean\(\.\.\.\) at .*converts a traced value", LIST_ARG),
    "test_numpy.py::test_std_list_of_boxes": (r"np\.std\(\.\.\.\) at .*converts a traced value", LIST_ARG),
    "test_numpy.py::test_var_list_of_boxes": (r"np\.var\(\.\.\.\) at .*converts a traced value", LIST_ARG),
    "test_linalg.py::test_norm_list_of_boxes": (r"np\.linalg\.norm\(\.\.\.\) at .*converts a traced value", LIST_ARG),
    "test_numpy.py::test_simple_append_list": (r"takes float\(\) of a traced value", LIST_ARG),
    "test_numpy.py::test_simple_append_list_2D": (r"np\.append\(\.\.\.\) at .*converts a traced value", LIST_ARG),
    "test_systematic.py::test_std": (r"analytic nan", "np.std of a one-element input: NaN gradient (autograd gives 0)"),
    "test_logic.py::test_nograd": (
        r"DID NOT RAISE <class 'TypeError'>|DID NOT RAISE TypeError",
        "grad of a bool-valued function returns zeros; autograd raises TypeError",
    ),
    "test_numpy.py::test_cast_to_int": (
        r"np\.int64\(W",
        "np.int64(traced array) refused; autograd returns a plain integer array",
    ),
    "test_scipy.py::test_solve_banded": (
        r"_CopyMode\.IF_NEEDED is neither True nor False",
        "np.array(traced, copy=np._CopyMode.IF_NEEDED) raises ValueError in adcli's np.array "
        "wrapper (engine/lists.py), reached from scipy.linalg.solve_banded",
    ),
    "test_scipy.py::test_odeint": (r"output times t", "scipy.integrate.odeint: gradient w.r.t. the output times t refused"),
    "test_scipy.py::test_mvn_sing_cov": (
        r"allow_singular=True",
        "scipy.stats.multivariate_normal.pdf(allow_singular=True) refused",
    ),
}

# (exception class name, regex on the first line of the message, cause; {0}, {1}... are groups)
CAUSES = [
    ("NoRuleError", r"no rule and no verified derivation for ([\w.]+)\(", "no rule for {0}"),
    ("UnsupportedError", r"^(scipy[\w.]+)\(.*?\) with a traced value", "{0}: refused with a traced argument"),
    ("UnsupportedError", r"^([\w.]+) has no derivative with respect to its ([\w ]+?),", "{0}: no derivative w.r.t. {1}"),
    (
        "UnsupportedError",
        r"a NumPy function body takes (float\(\)) of a traced value",
        "a NumPy function body calls float() on a traced value",
    ),
    ("TracingError", r"^(np\.[\w.]+)\(\.\.\.\) at .*? converts a traced value", "{0} converts a traced value to a plain array"),
    (
        "TracingError",
        r"conversion to a plain array \(np.asarray / np.array\) of a traced value",
        "np.asarray / np.array / np.int64 of a traced value",
    ),
    ("SuiteTimeout", r"", "timeout"),
]


def cause(rec: dict) -> str:
    exc, msg = rec.get("exc_type") or "", rec.get("message") or ""
    bases = rec.get("exc_bases") or [exc]
    for name, pattern, template in CAUSES:
        m = re.search(pattern, msg)
        if name in bases and m:
            return template.format(*m.groups())
    if exc == "AssertionError" and "(VJP) check" in msg:
        m = re.search(r"relative error ([\w.+-]+)", msg)
        rel = float(m.group(1)) if m else float("inf")
        if rel != rel:
            return "NaN gradient where finite differences are finite"
        if rel < 1e-4:
            return "numerical tolerance (relative error < 1e-4)"
        return "wrong gradient (VJP disagrees with finite differences)"
    if exc == "AssertionError" and "Gradient structure check" in msg:
        return "gradient structure/shape/dtype differs from the argument's"
    if exc == "Failed" and msg.startswith("DID NOT RAISE"):
        return f"no error where autograd raises ({msg.removeprefix('DID NOT RAISE ')})"
    if exc == "AssertionError":
        return "test assertion failed (value or dtype differs from autograd's)"
    return f"{exc}: {msg[:100]}"
