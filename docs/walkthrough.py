"""The README's walkthrough, run for real: ``python docs/walkthrough.py --write`` regenerates the
two output blocks of README.md's "Walkthrough" section from a fresh run (NO_COLOR, 100 columns,
in a temporary folder), and ``--check`` (what tests/test_readme.py runs) exits 1 when the README's
blocks no longer have the shape of a fresh run: the same commands, lines, words and columns,
numbers aside (timings differ between runs and machines).

The rule is written for you: ``adcli export --script`` synthesizes it from the function's source
and verifies it before it writes it; the second block shows an excerpt of it, then the rule at
work.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SCRIPT = "profiles/sum_loop_1000.py"
MARKERS = [("<!-- walkthrough:1 -->", "<!-- /walkthrough:1 -->"), ("<!-- walkthrough:2 -->", "<!-- /walkthrough:2 -->")]


def _run(shown: str, args: list, cwd: str, out: list, quiet_stdout: bool = False) -> None:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "140"}
    res = subprocess.run([sys.executable, "-m", "adcli", *args], capture_output=True, text=True, cwd=cwd, env=env)
    out.append(f"$ {shown}")
    text = ("" if quiet_stdout else res.stdout) + res.stderr
    out += [line.rstrip() for line in text.rstrip("\n").splitlines()]


def fresh() -> tuple[str, str]:
    """The two blocks' text from a run in a temporary folder."""
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(ROOT / "profiles", Path(tmp) / "profiles")
        first: list = []
        _run(f"adcli profile {SCRIPT}", ["profile", SCRIPT], tmp, first)
        first.append("")
        _run("adcli suggest", ["suggest"], tmp, first)
        first.append("")
        _run(f"adcli export -o rules.py --script {SCRIPT}", ["export", "-o", "rules.py", "--script", SCRIPT], tmp,
             first)
        rules = (Path(tmp) / "rules.py").read_text()
        start = rules.index("def f_pullback(")
        second = ["$ sed -n '/def f_pullback/,/return (_cotangent/p' rules.py    # the pullback written for you"]
        second += rules[start:rules.index("\n", rules.index("\n    return (_cotangent", start) + 1)].splitlines()
        check = ["check", "rules.py", "--profile", "adcli-profile.json", "--script", SCRIPT]
        _run(f"adcli {' '.join(check)}", check, tmp, second)
        _run(f"adcli profile --rules rules.py -o after.json {SCRIPT} > /dev/null",
             ["-q", "profile", "--rules", "rules.py", "-o", "after.json", SCRIPT], tmp, second, quiet_stdout=True)
        _run(f"adcli compare adcli-profile.json after.json --script {SCRIPT} --rules rules.py --format markdown",
             ["compare", "adcli-profile.json", "after.json", "--script", SCRIPT, "--rules", "rules.py", "--format",
              "markdown"], tmp, second)
        return "\n".join(first), "\n".join(second)


def _blocks(text: str) -> list:
    out = []
    for begin, end in MARKERS:
        m = re.search(re.escape(begin) + r"\n```text\n(.*?)\n```\n" + re.escape(end), text, re.S)
        if m is None:
            raise SystemExit(f"README.md has no block between {begin} and {end}")
        out.append(m)
    return out


def shape(block: str) -> list:
    """What must not drift: the commands, tables, headers and verdicts, word by word, with every
    number (and its unit: µs or ms, kB or MB follow the measurement) and the box-drawing rules
    left out; line breaks too, as wrapping follows the numbers' widths."""
    # indented lines are the advisor's reasons and check's reports: prose whose clauses follow
    # the measurements (a vectorisable share appears or not): not part of the shape
    block = "\n".join(line for line in block.splitlines() if not line.startswith("   "))
    text = re.sub(r"[━─┏┓┗┛┣┫┳┻╋┡┩╇┃│└┘┴┬┼├┤┌┐]+", " ", block)
    text = re.sub(r"[-+]?\d[\d.,]*(e[-+]?\d+)?(\s*(ns|µs|ms|s|B|kB|MB|GB)\b)?", "#", text)
    # a measured range is one number or two as the noise has it: "96%", "95-96%", "-93% to -94%"
    text = re.sub(r"#(\s*%)? to #", "#", re.sub(r"#+", "#", text))
    return text.split()


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args not in (["--write"], ["--check"]):
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        return 2
    text = README.read_text()
    blocks = _blocks(text)
    new = fresh()
    if args == ["--write"]:
        for m, body in sorted(zip(blocks, new), key=lambda p: -p[0].start(1)):
            text = text[:m.start(1)] + body + text[m.end(1):]
        README.write_text(text)
        return 0
    bad = [i + 1 for i, (m, body) in enumerate(zip(blocks, new)) if shape(m.group(1)) != shape(body)]
    for i in bad:
        old, now = shape(blocks[i - 1].group(1)), shape(new[i - 1])
        k = next((k for k, (a, b) in enumerate(zip(old, now)) if a != b), min(len(old), len(now)))
        diff = f"word {k + 1}: README {' '.join(old[k:k + 8])!r}, now {' '.join(now[k:k + 8])!r}"
        print(f"README.md walkthrough block {i} is stale ({diff}): run python docs/walkthrough.py --write")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
