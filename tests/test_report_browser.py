"""adcli report in a real headless browser (Debian's chromium, which the README's test command
installs): the page loads with no console message, the browser's own DOM has the tables, charts
and flame graphs, every link between the advice, the charts and the signatures lands on an
element, and a screenshot is taken (kept in ADCLI_TEST_ARTIFACTS when that is set)."""

import os
import re
import shutil
import subprocess

from click.testing import CliRunner

from adcli.cli import cli
from tests.test_report import _Page

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# as root, without a display, and without the background connections a closed network refuses
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _chromium(tmp_path, *args):
    assert CHROMIUM, "Debian's chromium is needed for this test (apt-get install chromium; the README's test command does)"
    profile_dir = tmp_path / "chromium-profile"
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile_dir}", *args], capture_output=True, text=True,
                          timeout=120)


def test_the_report_in_headless_chromium(tmp_path):
    prof, page = str(tmp_path / "p.json"), tmp_path / "report.html"
    runner = CliRunner()
    assert runner.invoke(cli, ["profile", "-o", prof, os.path.join(ROOT, "profiles", "gp_lml.py")]).exit_code == 0
    assert runner.invoke(cli, ["report", prof, "-o", str(page)]).exit_code == 0
    url = page.as_uri()

    dom = _chromium(tmp_path, "--enable-logging=stderr", "--v=0", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    assert not console, console  # no console message: no error, no warning
    parsed = _Page()
    parsed.feed(dom.stdout)
    assert {"p0-status", "p0-signatures", "p0-ratios", "p0-forward", "p0-reverse", "advice"} <= parsed.ids
    assert parsed.tags.count("tr") >= 9 and parsed.tags.count("svg") == 3 and parsed.tags.count("rect") >= 10
    links = [h for h in parsed.hrefs if h.startswith("#")]
    assert links and all(h[1:] in parsed.ids for h in links)  # advice, bars and frames land on their rows

    shot = tmp_path / "report.png"
    res = _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,2000", url)
    assert res.returncode == 0 and shot.exists(), res.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 30_000  # a rendered page, not a blank one
    if os.environ.get("ADCLI_TEST_ARTIFACTS"):
        os.makedirs(os.environ["ADCLI_TEST_ARTIFACTS"], exist_ok=True)
        shutil.copy(shot, os.path.join(os.environ["ADCLI_TEST_ARTIFACTS"], "report.png"))


# measures, in the browser's own layout, the numeric cells whose text takes more than one line
_COUNT_WRAPPED = """<script>
let wrapped = [];
for (const td of document.querySelectorAll("td:not(.l)")) {
  const range = document.createRange();
  range.selectNodeContents(td);
  const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
  if (tops.size > 1) wrapped.push(td.textContent);
}
document.body.setAttribute("data-cells", document.querySelectorAll("td:not(.l)").length);
document.body.setAttribute("data-wrapped", JSON.stringify(wrapped));
</script></body>"""


def test_numbers_and_their_units_stay_on_one_line_in_a_narrow_window(tmp_path):
    prof, page = str(tmp_path / "p.json"), tmp_path / "report.html"
    runner = CliRunner()
    assert runner.invoke(cli, ["profile", "-o", prof, os.path.join(ROOT, "profiles", "gp_lml.py")]).exit_code == 0
    assert runner.invoke(cli, ["report", prof, "-o", str(page)]).exit_code == 0
    probe = tmp_path / "probe.html"  # the page with a measuring script (the report itself has none)
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", _COUNT_WRAPPED), encoding="utf-8")
    dom = _chromium(tmp_path, "--window-size=420,2000", "--dump-dom", probe.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    cells = int(re.search(r'data-cells="(\d+)"', dom.stdout).group(1))
    wrapped = re.search(r'data-wrapped="([^"]*)"', dom.stdout).group(1)
    assert cells >= 40 and wrapped == "[]", wrapped
