"""``adcli check``'s table on a terminal: its notes wrapped to the terminal's width, never cut;
its statuses coloured (with --color, as on a terminal), plain with NO_COLOR or off a terminal."""

from adcli.rules import unregister
from tests.test_check import invoke, program, write_rules  # noqa: F401  (program: the fixture)


def test_the_report_fits_80_columns_and_the_status_is_coloured_on_a_terminal(program, monkeypatch):  # noqa: F811
    folder, module = program
    rules = write_rules(folder, module, factor=2.0)
    args = ["check", rules, "--profile", "p.json", "--script", "prog.py", "--module", f"{module}.py"]
    monkeypatch.setenv("COLUMNS", "80")
    res = invoke(*args)
    assert res.exit_code == 1 and res.stdout.startswith("WRONG  ")
    long = [line for line in res.stdout.splitlines() if len(line) > 80]
    assert not long, long  # every note wrapped, none cut: its words all there
    assert "argument 0 (x)" in " ".join(res.stdout.split()) and "\x1b[" not in res.stdout
    unregister(f"{module}:logsumexp")
    res = invoke("--color", *args)  # as on a terminal without NO_COLOR
    assert res.stdout.startswith("\x1b[1;31mWRONG\x1b[0m  ")  # bold red
    write_rules(folder, module)
    unregister(f"{module}:logsumexp")
    assert invoke("--color", *args).stdout.startswith("\x1b[1;32mOK   \x1b[0m  ")  # bold green


def test_a_terminal_gets_colours_unless_no_color_is_set(monkeypatch):
    from adcli.render import console

    monkeypatch.setattr(console.os, "isatty", lambda fd: True)  # rich's console decides for a terminal
    monkeypatch.setattr(console, "COLOR", None)  # neither --color nor --no-color
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert console.paint("OK", "bold green") == "\x1b[1;32mOK\x1b[0m"
    monkeypatch.setenv("NO_COLOR", "1")
    assert console.paint("OK", "bold green") == "OK"
    monkeypatch.setattr(console, "COLOR", True)  # --color wins over NO_COLOR
    assert console.paint("OK", "bold green").startswith("\x1b[")
