"""GitHub Actions steps, run here as the runner runs them, for the workflow and action tests.

What the runner does and this does too: `${{ }}` expressions (contexts, the
operators, `.*` filters, the functions the files use, loose equality and
case-insensitive strings) in `if:`, `env:`, `with:` and `run:`; `if:` without a
status function means `success() && (...)`; a `run:` step is a script file run
with `bash --noprofile --norc -eo pipefail`, in the workspace, with the step's
env and fresh GITHUB_OUTPUT / GITHUB_STEP_SUMMARY files (outputs read back,
summaries appended to the job's); a composite action gets its inputs from
`with:` or its defaults (evaluated with the github context), GITHUB_ACTION_PATH,
its own steps context, and its outputs evaluated after its steps.
What a test supplies: a stand-in for each JavaScript action (`uses` ->
callable), where a local action's files are (`uses` -> directory), and, by
name, a run step it replaces (the install step, so that a test does not
reinstall harness into the environment running it; one test runs it as is).
Unsupported syntax raises, so a test never passes on a guess.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>-?\d+(?:\.\d+)?)|(?P<op>==|!=|<=|>=|&&|\|\||[!<>()\[\],.*])"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_-]*))"
)
STATUS_FUNCTIONS = ("always", "success", "failure", "cancelled")


class Filtered(list):
    """The result of a `.*` filter: property access then maps over the items."""


def tokens(text: str) -> list[tuple[str, str]]:
    out, at = [], 0
    while at < len(text.rstrip()):
        match = TOKEN.match(text, at)
        if not match:
            raise ValueError(f"expression syntax not supported here: {text[at:]!r}")
        kind = match.lastgroup
        out.append((kind, match.group(kind)))
        at = match.end()
    return out


def to_number(value) -> float:
    if value is None or value is False:
        return 0.0
    if value is True:
        return 1.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip() or "0")
        except ValueError:
            return math.nan
    return math.nan


def loose_equal(a, b) -> bool:
    """GitHub's `==`: strings case-insensitively, other types coerced to numbers."""
    if isinstance(a, str) and isinstance(b, str):
        return a.casefold() == b.casefold()
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return a is b
    return to_number(a) == to_number(b)


def truthy(value) -> bool:
    if isinstance(value, float) and math.isnan(value):
        return False
    return value not in (None, False, 0, "")


def to_string(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict | list):
        return json.dumps(value, indent=2)
    return str(value)


def member(value, name: str):
    if isinstance(value, Filtered):
        return Filtered(v for item in value if (v := member(item, name)) is not None)
    if isinstance(value, dict):
        for key, item in value.items():
            if key.casefold() == name.casefold():
                return item
    return None


def contains(search, item) -> bool:
    if isinstance(search, list):
        return any(loose_equal(element, item) for element in search)
    return to_string(item).casefold() in to_string(search).casefold()


class Expression:
    """One `${{ }}` expression, parsed by recursive descent and evaluated on contexts."""

    def __init__(self, text: str, contexts: dict, status: Callable[[str], bool]) -> None:
        self.items, self.at = tokens(text), 0
        self.contexts, self.status = contexts, status

    def value(self):
        result = self.disjunction()
        if self.at != len(self.items):
            raise ValueError(f"unexpected {self.items[self.at][1]!r}")
        return result

    def peek(self) -> str | None:
        return self.items[self.at][1] if self.at < len(self.items) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        kind, text = self.items[self.at]
        if expected is not None and text != expected:
            raise ValueError(f"expected {expected!r}, got {text!r}")
        self.at += 1
        return kind, text

    def disjunction(self):
        left = self.conjunction()
        while self.peek() == "||":
            self.take()
            right = self.conjunction()
            left = left if truthy(left) else right
        return left

    def conjunction(self):
        left = self.comparison()
        while self.peek() == "&&":
            self.take()
            right = self.comparison()
            left = right if truthy(left) else left
        return left

    def comparison(self):
        left = self.unary()
        while self.peek() in ("==", "!=", "<", ">", "<=", ">="):
            op = self.take()[1]
            right = self.unary()
            if op in ("==", "!="):
                left = loose_equal(left, right) == (op == "==")
            else:
                a, b = to_number(left), to_number(right)
                left = {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op]
        return left

    def unary(self):
        if self.peek() == "!":
            self.take()
            return not truthy(self.unary())
        return self.postfix(self.primary())

    def postfix(self, value):
        while self.peek() in (".", "["):
            if self.take()[1] == "[":
                key = self.disjunction()
                self.take("]")
                value = value[int(key)] if isinstance(value, list) else member(value, str(key))
            elif self.peek() == "*":
                self.take()
                value = Filtered(value.values() if isinstance(value, dict) else value or [])
            else:
                value = member(value, self.take()[1])
        return value

    def primary(self):
        kind, text = self.take()
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if kind == "num":
            return float(text)
        if text == "(":
            inner = self.disjunction()
            self.take(")")
            return inner
        if kind != "name":
            raise ValueError(f"unexpected {text!r}")
        if self.peek() == "(":
            return self.call(text)
        literals = {"true": True, "false": False, "null": None}
        if text in literals:
            return literals[text]
        if text not in self.contexts:
            raise ValueError(f"context {text!r} is not available here")
        return self.contexts[text]

    def call(self, name: str):
        self.take("(")
        args = []
        while self.peek() != ")":
            args.append(self.disjunction())
            if self.peek() == ",":
                self.take()
        self.take(")")
        if name in STATUS_FUNCTIONS:
            return self.status(name)
        functions = {
            "contains": contains,
            "startswith": lambda s, p: to_string(s).casefold().startswith(to_string(p).casefold()),
            "endswith": lambda s, p: to_string(s).casefold().endswith(to_string(p).casefold()),
            "join": lambda a, sep=",": to_string(sep).join(map(to_string, a)),
            "tojson": lambda v: json.dumps(v, indent=2),
            "fromjson": json.loads,
        }
        return functions[name.casefold()](*args)


def scalar(value) -> str:
    """A YAML value as the runner reads it: `true` is the string "true", not Python's."""
    return value if isinstance(value, str) else to_string(value)


def interpolate(text: str, contexts: dict, status: Callable[[str], bool]) -> str:
    """`text` with every `${{ expr }}` replaced by its value as a string."""
    return re.sub(
        r"\$\{\{(.*?)\}\}",
        lambda m: to_string(Expression(m.group(1), contexts, status).value()),
        text,
        flags=re.S,
    )


def condition(text, contexts: dict, status: Callable[[str], bool]) -> bool:
    """An `if:` as the runner reads it: implicit `success() &&` unless it names a status."""
    if text is None:
        return status("success")
    if isinstance(text, bool):
        return text
    expr = text.strip()
    if expr.startswith("${{") and expr.endswith("}}"):
        expr = expr[3:-2]
    if not re.search(r"\b(" + "|".join(STATUS_FUNCTIONS) + r")\s*\(", expr):
        expr = f"success() && ({expr})"
    return truthy(Expression(expr, contexts, status).value())


@dataclass
class Step:
    """What one step did: its outcome, outputs, and (for run steps) its process."""

    name: str
    id: str | None
    outcome: str  # success, failure or skipped
    uses: str | None = None
    inputs: dict = field(default_factory=dict)  # `with:`, evaluated
    outputs: dict = field(default_factory=dict)
    code: int | None = None
    stdout: str = ""
    stderr: str = ""
    inner: list[Step] = field(default_factory=list)  # a composite action's own steps


@dataclass
class Run:
    """The steps of a job or of a composite action, in order, and what they left."""

    steps: list[Step]
    outputs: dict = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return any(s.outcome == "failure" for s in self.steps)

    def step(self, name: str) -> Step:
        (found,) = [s for s in self.all_steps() if name in (s.name, s.id)]
        return found

    def all_steps(self) -> list[Step]:
        return [x for s in self.steps for x in (s, *s.inner)]


def parse_outputs(text: str) -> dict[str, str]:
    """GITHUB_OUTPUT's two forms: `name=value` and `name<<DELIMITER ... DELIMITER`."""
    outputs, lines = {}, iter(text.splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            body = []
            for inner in lines:
                if inner == delimiter:
                    break
                body.append(inner)
            outputs[name] = "\n".join(body)
        elif "=" in line:
            name, value = line.split("=", 1)
            outputs[name] = value
    return outputs


@dataclass
class Runner:
    """One job's machine: a workspace, a temp directory, the event, and stand-ins for `uses:`."""

    workspace: Path
    temp: Path
    event: dict
    actions: dict[str, Path | Callable[[dict, Runner], dict]]
    env: dict[str, str] = field(default_factory=dict)  # the machine's environment
    replaced: dict[str, str] = field(default_factory=dict)  # run step name -> script run instead
    artifacts: Path | None = None  # where upload-artifact keeps them (shared by a workflow's jobs)
    repository: str = "octo/sglang"
    token: str = ""  # github.token
    event_name: str = "pull_request"
    summary: str = ""  # every step's GITHUB_STEP_SUMMARY, in order
    count: int = 0  # run steps so far, to name their files

    def github(self, **extra) -> dict:
        return {"event": self.event, "event_name": self.event_name, "repository": self.repository,
                "workspace": str(self.workspace), "token": self.token, **extra}  # fmt: skip

    def run_job(self, job: dict) -> Run:
        contexts = {"github": self.github(), "env": {}, "steps": {},
                    "runner": {"temp": str(self.temp), "os": "Linux"}}  # fmt: skip
        contexts["env"] = self.evaluate_map(job.get("env", {}), contexts, lambda _: True)
        return self.run_steps(job["steps"], contexts)

    def run_action(self, directory: Path, inputs: dict, contexts: dict | None = None) -> Run:
        """A composite action at `directory`, given `inputs` (already evaluated)."""
        action = yaml.safe_load((directory / "action.yml").read_text())
        assert action["runs"]["using"] == "composite"
        declared = action.get("inputs", {})
        unknown = set(inputs) - set(declared)
        assert not unknown, f"inputs the action does not declare: {sorted(unknown)}"
        outer = contexts or {"env": {}, "runner": {"temp": str(self.temp), "os": "Linux"}}
        inner = {**outer, "github": self.github(action_path=str(directory)), "steps": {}}
        inner["inputs"] = {
            name: inputs.get(name, interpolate(scalar(spec.get("default")), inner, lambda _: True))
            for name, spec in declared.items()
        }
        run = self.run_steps(action["runs"]["steps"], inner, {"GITHUB_ACTION_PATH": str(directory)})
        run.outputs = {
            name: interpolate(str(spec["value"]), inner, lambda _: True)
            for name, spec in action.get("outputs", {}).items()
        }
        return run

    def run_steps(self, steps: list[dict], contexts: dict, extra_env: dict | None = None) -> Run:
        run = Run([])
        for number, spec in enumerate(steps):
            state = "failure" if run.failed else "success"
            status = {"always": True, "success": state == "success",
                      "failure": state == "failure", "cancelled": False}  # fmt: skip
            done = self.run_step(spec, number, contexts, status.__getitem__, extra_env or {})
            run.steps.append(done)
            if done.id:
                contexts["steps"][done.id] = {"outcome": done.outcome, "conclusion": done.outcome,
                                              "outputs": done.outputs}  # fmt: skip
        return run

    def run_step(self, spec: dict, number: int, contexts, status, extra_env: dict) -> Step:
        name = spec.get("name") or spec.get("uses") or f"step {number}"
        if not condition(spec.get("if"), contexts, status):
            return Step(name, spec.get("id"), "skipped", spec.get("uses"))
        env = {**contexts["env"], **self.evaluate_map(spec.get("env", {}), contexts, status)}
        if "uses" in spec:
            inputs = self.evaluate_map(spec.get("with", {}), contexts, status)
            return self.use(spec, name, inputs, {**contexts, "env": env})
        script = self.replaced.get(name) or interpolate(
            spec["run"], {**contexts, "env": env}, status
        )
        return self.shell(spec, name, script, {**env, **extra_env})

    def evaluate_map(self, values: dict, contexts: dict, status) -> dict[str, str]:
        return {k: interpolate(scalar(v), contexts, status) for k, v in values.items()}

    def use(self, spec: dict, name: str, inputs: dict, contexts: dict) -> Step:
        target = self.actions[spec["uses"]]
        if isinstance(target, Path):
            inner = self.run_action(target, inputs, {k: contexts[k] for k in ("env", "runner")})
            outcome = "failure" if inner.failed else "success"
            return Step(name, spec.get("id"), outcome, spec["uses"], inputs, inner.outputs,
                        inner=inner.steps)  # fmt: skip
        try:
            outputs = target(inputs, self)
        except RuntimeError as exc:
            return Step(name, spec.get("id"), "failure", spec["uses"], inputs, stderr=str(exc))
        return Step(name, spec.get("id"), "success", spec["uses"], inputs, outputs or {})

    def shell(self, spec: dict, name: str, script: str, env: dict) -> Step:
        assert spec.get("shell", "bash") == "bash", spec.get("shell")
        self.count += 1
        files = {n: self.temp / f"step-{self.count}-{n.lower()}"
                 for n in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY")}  # fmt: skip
        for path in files.values():
            path.write_text("")
        script_file = self.temp / f"step-{self.count}.sh"
        script_file.write_text(script)
        machine = {**os.environ, **self.env, "CI": "true", "GITHUB_ACTIONS": "true",
                   "GITHUB_WORKSPACE": str(self.workspace), "RUNNER_TEMP": str(self.temp),
                   "GITHUB_REPOSITORY": self.repository}  # fmt: skip
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script_file)],
            cwd=self.workspace, env={**machine, **env, **{k: str(v) for k, v in files.items()}},
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        self.summary += files["GITHUB_STEP_SUMMARY"].read_text()
        outputs = parse_outputs(files["GITHUB_OUTPUT"].read_text())
        outcome = "success" if done.returncode == 0 else "failure"
        return Step(name, spec.get("id"), outcome, None, {}, outputs, done.returncode,
                    done.stdout, done.stderr)  # fmt: skip


# Stand-ins for the JavaScript actions the files use: each does what the test needs of it.


def checkout(inputs: dict, runner: Runner) -> dict:
    """The workspace already holds the checkout the test made (its `with:` is recorded)."""
    return {}


def setup_python(inputs: dict, runner: Runner) -> dict:
    """The Python running the tests stays the one on PATH."""
    return {"python-version": inputs.get("python-version", "")}


def upload_artifact(inputs: dict, runner: Runner) -> dict:
    """Copy `path` to the run's artifacts under `name`; a second upload of a name fails, as in v4."""
    target = runner.artifacts / inputs["name"]
    if target.exists():
        raise RuntimeError(f"an artifact named {inputs['name']} exists already")
    source = runner.workspace / inputs["path"]  # an absolute path stays itself
    if source.is_dir():
        shutil.copytree(source, target)
    return {"artifact-id": "1"} if source.is_dir() else {}


def download_artifact(inputs: dict, runner: Runner) -> dict:
    """Copy the artifact `name` into `path` under the workspace."""
    source = runner.artifacts / inputs["name"]
    if not source.is_dir():
        raise RuntimeError(f"no artifact named {inputs['name']}")
    shutil.copytree(source, runner.workspace / inputs.get("path", "."), dirs_exist_ok=True)
    return {"download-path": str(runner.workspace / inputs.get("path", "."))}


STAND_INS = {
    "actions/checkout@v4": checkout,
    "actions/setup-python@v5": setup_python,
    "actions/upload-artifact@v4": upload_artifact,
    "actions/download-artifact@v4": download_artifact,
}
