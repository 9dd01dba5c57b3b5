"""The site build's terminal output (tools/execution/step.run_logged,
tools/staging/build.build_site) and `make serve`'s server (tools/staging/serve.serve): Sphinx's
output goes to a log, its warnings and errors to the terminal, and the last line says where the
site is and how to open it."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request

import pytest

from tests.helpers import need_module
from tools import pipeline
from tools.execution import runs, step
from tools.staging import build as site_build
from tools.staging import serve as site_serve

# What Jupyter Book prints, in its colours: Sphinx's progress on standard output, then its
# message box naming the folder it built into; warnings and errors on standard error.
FAKE_JUPYTER_BOOK = textwrap.dedent("""\
    import sys
    from pathlib import Path

    out, fail = Path(sys.argv[1]), sys.argv[2] == "fail"
    for n in range(200):
        print(f"\\x1b[01mreading sources... \\x1b[39;49;00m[{n:3d}%] "
              f"\\x1b[35mbook/page{n}\\x1b[39;49;00m")
    if fail:
        print("\\x1b[91m/src/book/intro.md:3: WARNING: undefined label: 'nowhere'\\x1b[39;49;00m",
              file=sys.stderr)
        print("ERROR: something else went wrong", file=sys.stderr)
    print("build succeeded." if not fail else "build finished with problems, 2 warnings.")
    print(f"The HTML pages are in {out}/_build/html.")
    rule = "\\x1b[92m" + "=" * 79 + "\\x1b[0m"
    print(rule, "", "Finished generating HTML for book.", "Your book's HTML pages are here:",
          f"    {out}/_build/html/", rule, sep="\\n")
    (out / "_build" / "html").mkdir(parents=True, exist_ok=True)
    (out / "_build" / "html" / "index.html").write_text("<p>built</p>")
    sys.exit(1 if fail else 0)
    """)


@pytest.fixture
def fake_jupyter_book(tmp_path, monkeypatch):
    """Every Jupyter Book build of the pipeline runs the fake above: `fail` makes it warn."""
    script = tmp_path / "fake_jupyter_book.py"
    script.write_text(FAKE_JUPYTER_BOOK)
    outcome = {"result": "pass"}

    def command(src, out, *builder):
        return [sys.executable, str(script), str(out), outcome["result"]]

    monkeypatch.setattr(site_build, "jupyter_book_command", command)
    return outcome


def test_run_logged_logs_everything_and_shows_only_the_warnings_and_errors(
    tmp_path, capfd, fake_jupyter_book
):
    """Standard output goes to the log only (colours and the message box left out); both
    warning lines reach the terminal and the log; the exit status is the command's."""
    log = tmp_path / "reports" / "site_build.log"
    command = site_build.jupyter_book_command(tmp_path, tmp_path / "out", "html")
    assert step.run_logged(command, log) == (0, [])
    terminal = capfd.readouterr()
    assert terminal.out == terminal.err == ""
    fake_jupyter_book["result"] = "fail"
    command = site_build.jupyter_book_command(tmp_path, tmp_path / "out", "html")
    code, shown = step.run_logged(command, log)
    terminal = capfd.readouterr()
    assert code == 1
    assert shown == [
        "/src/book/intro.md:3: WARNING: undefined label: 'nowhere'",
        "ERROR: something else went wrong",
    ]
    assert terminal.out == "" and terminal.err.splitlines() == shown  # not a tty: no colours
    text = log.read_text()
    assert text.count("reading sources... ") == 400 and "[199%] book/page199\n" in text
    assert "WARNING: undefined label: 'nowhere'\n" in text and "build succeeded." in text
    assert "\x1b" not in text
    assert "Finished generating HTML" not in text and "=" * 79 not in text
    assert text.count(f"$ {sys.executable} ") == 2  # each run's command heads its part


def _executed_run(tmp_path, monkeypatch, mode="full", kernel="gpulab") -> runs.RunConfig:
    """A run in a temporary build folder whose report says one notebook passed."""
    monkeypatch.setattr(runs, "BUILD", tmp_path / "_build")
    run = runs.RunConfig(mode=mode, kernel=kernel)
    report = runs.report_path(run)
    report.parent.mkdir(parents=True)
    report.write_text(json.dumps({"notebooks": [{"notebook": "notebooks/00_x.ipynb", "ok": True}]}))
    return run


def _staged_without_notebooks(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(site_build, "stage_site", lambda run, edition="en": tmp_path / edition)
    monkeypatch.chdir(tmp_path)


def test_the_site_step_prints_a_few_lines_and_ends_naming_the_site_and_make_serve(
    tmp_path, monkeypatch, capfd, fake_jupyter_book
):
    """Three builds of 200 lines of progress each: on the terminal the pipeline's own lines,
    the first naming the log and the last naming index.html and `make serve`."""
    run = _executed_run(tmp_path, monkeypatch)
    _staged_without_notebooks(monkeypatch, tmp_path)
    index = site_build.build_site(run)
    lines = capfd.readouterr().out.splitlines()
    assert len(lines) <= 6, lines
    assert "_build/full-gpulab/reports/site_build.log" in lines[0]
    assert lines[-1].startswith("The site is built in ")
    assert "_build/full-gpulab/_build/html/index.html" in lines[-1]
    assert "`make serve`, then open http://127.0.0.1:8000/" in lines[-1]
    assert "build_zh_CN" not in "\n".join(lines)  # the folder the Chinese edition left
    assert (index.parent / "zh_CN" / "index.html").is_file()
    assert not (run.run_dir / "build_zh_CN").exists()
    log = runs.site_log(run).read_text()
    assert log.count("reading sources... ") == 600  # catalogues, English, Chinese
    assert (
        f"moved {run.run_dir / 'build_zh_CN' / '_build' / 'html'} to {index.parent / 'zh_CN'}"
        in log
    )


def test_a_warning_fails_the_site_step_and_is_shown_with_the_log(
    tmp_path, monkeypatch, capfd, fake_jupyter_book
):
    """The build stops at the first build that warned; the warning is on the terminal."""
    run = _executed_run(tmp_path, monkeypatch, mode="quick", kernel="gpulab-cpu")
    _staged_without_notebooks(monkeypatch, tmp_path)
    fake_jupyter_book["result"] = "fail"
    with pytest.raises(SystemExit) as stop:
        site_build.build_site(run)
    assert str(stop.value).startswith(
        "FAILED: the message catalogues (exit status 1): the warnings and errors above fail it"
    )
    assert str(stop.value).endswith("_build/quick/reports/site_build.log")
    assert "WARNING: undefined label: 'nowhere'" in capfd.readouterr().err


def test_a_broken_reference_fails_a_real_jupyter_book_build_and_shows_its_warning(tmp_path, capfd):
    """A one-page book whose {ref} names no label: Sphinx's warning reaches the terminal and,
    warnings being errors, fails the build; its progress stays in the log."""
    need_module("jupyter_book", "dev")
    src = tmp_path / "book"
    src.mkdir()
    (src / "_config.yml").write_text('title: tiny\nexecute:\n  execute_notebooks: "off"\n')
    (src / "_toc.yml").write_text("format: jb-book\nroot: intro\n")
    (src / "intro.md").write_text("# Intro\n\nSee {ref}`nowhere`.\n")
    log = tmp_path / "site_build.log"
    with pytest.raises(SystemExit) as stop:
        site_build._jupyter_book(src, tmp_path / "out", "html", log=log, what="the tiny book")
    assert str(stop.value).startswith("FAILED: the tiny book (exit status 1)")
    terminal = capfd.readouterr()
    assert terminal.out == ""
    assert f"{src / 'intro.md'}:3: WARNING: undefined label: 'nowhere'" in terminal.err
    assert "reading sources" not in terminal.err and "reading sources" in log.read_text()


@pytest.mark.parametrize(
    ("mode", "kernel", "names"),
    [
        ("full", "gpulab", "`make book` executes them"),
        ("quick", "gpulab-cpu", "`python tools/pipeline.py execute --mode quick` executes them"),
    ],
)
def test_the_site_step_without_executed_notebooks_says_what_executes_them(
    tmp_path, monkeypatch, mode, kernel, names
):
    """No timing report in the run: one line naming the folder and the command, nothing built."""
    monkeypatch.setattr(runs, "BUILD", tmp_path / "_build")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        pipeline.main(["site", "--mode", mode])
    message = str(stop.value)
    assert message.startswith(f"no executed notebooks in _build/{mode}")
    assert names in message and "make book" in message and "\n" not in message
    assert not (tmp_path / "_build").exists()


def test_serve_without_a_site_says_what_builds_it(tmp_path, monkeypatch, capsys):
    """`make serve` before `make book`: exit status 1 and a line naming `make book`; when
    `make test` has built the quick site, the line says how to serve that one."""
    monkeypatch.setattr(runs, "BUILD", tmp_path / "_build")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(site_serve.os, "execv", lambda *a: pytest.fail("no server without a site"))
    assert pipeline.main(["serve", "--mode", "full"]) == 1
    err = capsys.readouterr().err
    assert "no site built in _build/full-gpulab/_build/html yet: `make book` builds it" in err
    assert "MODE=quick" not in err
    quick = runs.html_dir(runs.RunConfig(mode="quick"))
    quick.mkdir(parents=True)
    (quick / "index.html").write_text("")
    assert pipeline.main(["serve", "--mode", "full", "--port", "8123"]) == 1
    assert "`make serve MODE=quick`, then open http://127.0.0.1:8123/" in capsys.readouterr().err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, seconds: float = 60.0) -> str:
    """The page at `url`, once the server answers (it starts in the background)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.read().decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_serve_serves_both_editions_over_http_on_127_0_0_1(tmp_path, monkeypatch, capsys):
    """The command `serve` hands the process to serves the site folder: English at the root,
    Chinese under zh_CN/, on the loopback address only; the line before says what to open."""
    run = _executed_run(tmp_path, monkeypatch, mode="quick", kernel="gpulab-cpu")
    html = runs.html_dir(run)
    (html / "zh_CN").mkdir(parents=True)
    (html / "index.html").write_text("<p>English</p>")
    (html / "zh_CN" / "index.html").write_text("<p>中文</p>", encoding="utf-8")
    handed = []
    monkeypatch.setattr(site_serve.os, "execv", lambda path, argv: handed.append((path, argv)))
    port = _free_port()
    pipeline.main(["serve", "--port", str(port)])
    ((path, argv),) = handed
    assert path == argv[0] == sys.executable
    assert "--bind" in argv and argv[argv.index("--bind") + 1] == "127.0.0.1"
    assert f"open http://127.0.0.1:{port}/ " in capsys.readouterr().out
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert _get(f"http://127.0.0.1:{port}/") == "<p>English</p>"
        assert _get(f"http://127.0.0.1:{port}/zh_CN/") == "<p>中文</p>"
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_serve_on_a_taken_port_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    """Another server on the port: exit status 1 and a line naming another PORT, where
    http.server would print a traceback."""
    run = _executed_run(tmp_path, monkeypatch, mode="quick", kernel="gpulab-cpu")
    html = runs.html_dir(run)
    html.mkdir(parents=True)
    (html / "index.html").write_text("")
    monkeypatch.setattr(site_serve.os, "execv", lambda *a: pytest.fail("the port is taken"))
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        assert pipeline.main(["serve", "--port", str(port)]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"port {port} on 127.0.0.1 is taken (another server?): choose another, "
        f"as in `make serve PORT={port + 1}`\n"
    )
