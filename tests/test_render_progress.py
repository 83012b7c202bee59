"""The replays' progress line: one line that fits the terminal, the label cut with an ellipsis."""

import io

import pytest
from rich.console import Console
from rich.progress import Progress

from adcli.render.progress import cut, layout

LABEL = "numpy.linalg.solve(f64[2d,F], f64[1d]) and a signature name longer than any terminal's room for it"


@pytest.mark.parametrize("width", [60, 80, 100, 140])
def test_the_progress_line_fits_the_terminal(width):
    console = Console(file=io.StringIO(), width=width, color_system=None)
    columns, room = layout(width)
    progress = Progress(*columns, console=console)
    task = progress.add_task(cut(LABEL, room), total=12, calls=1234567)
    progress.update(task, completed=12)
    with console.capture() as cap:
        console.print(progress.make_tasks_table(progress.tasks))
    [line] = cap.get().splitlines()  # one line, not wrapped
    assert len(line) <= width and "12/12 1234567 calls" in line
    assert line.endswith("…") and (width < 80 or "numpy.lin" in line)


def test_a_label_is_cut_only_when_it_does_not_fit():
    assert cut("numpy.sum(f64[1d])", 18) == "numpy.sum(f64[1d])"
    assert cut("numpy.sum(f64[1d])", 10) == "numpy.sum…"
