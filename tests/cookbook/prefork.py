"""Runs the cookbook's side of the differential tests (run_sft/dpo/rl/distill.py,
make_teacher.py) as forks of one process that imported tinker-cookbook once.

Each script run is a process of its own with its own arguments and environment, as with
`python script.py`, but without the 5-8 s of importing torch, transformers, datasets and the
cookbook that every such start costs (most of a run's time: the runs themselves take 1-4 s
against tinker-sim). The fork happens before anything runs: the parent only imports modules
and loads the tokenizer files, with the offline environment the scripts set for themselves
already in place (huggingface_hub reads HF_HUB_OFFLINE when imported)."""
from __future__ import annotations

import importlib
import os
import runpy
import select
import signal
import sys
import tempfile
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent

# What the scripts import, so that a forked run finds it in sys.modules.
MODULES = (
    "chz", "tinker", "transformers", "transformers.models.auto.tokenization_auto",
    "tinker_cookbook.supervised.train", "tinker_cookbook.supervised.data", "tinker_cookbook.supervised.types",
    "tinker_cookbook.preference.train_dpo", "tinker_cookbook.preference.dpo_datasets",
    "tinker_cookbook.preference.preference_datasets", "tinker_cookbook.rl.train", "tinker_cookbook.rl.problem_env",
    "tinker_cookbook.recipes.math_rl.arithmetic_env", "tinker_cookbook.distillation.train_on_policy",
    "tinker_cookbook.distillation.datasets", "tinker_cookbook.renderers", "tinker_cookbook.tokenizer_utils",
    "tinker_cookbook.utils.cost_estimation",
)
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TINKER_API_KEY": "tml-local",
               "GIT_OPTIONAL_LOCKS": "0", "WANDB_MODE": "disabled"}

_loaded: set[str] = set()


def preload(tokenizer_dirs: list[str] = ()) -> None:
    """Imports MODULES (and loads the tokenizers in `tokenizer_dirs`) in this process once."""
    if not _loaded:
        os.environ.update(OFFLINE_ENV)
        sys.path.insert(0, str(HERE))
        for m in MODULES:
            importlib.import_module(m)
        _loaded.add("")
    import offline

    for d in tokenizer_dirs:
        if str(d) not in _loaded:
            offline.load_tokenizer(str(d))
            _loaded.add(str(d))


def run(argv: list[str], env: dict[str, str], timeout: float) -> tuple[int, str, str]:
    """Runs `argv` ([python, script, args...]) as a fork: (exit status, stdout, stderr).
    A run still going after `timeout` seconds is killed and reported as status -9."""
    preload()
    script, args = argv[1], argv[2:]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(script, args, env, out.fileno(), err.fileno())
        status = _wait(pid, timeout)
        out.seek(0)
        err.seek(0)
        return status, out.read().decode(errors="replace"), err.read().decode(errors="replace")


def _child(script: str, args: list[str], env: dict[str, str], out: int, err: int) -> None:
    code = 1
    try:
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.environ.clear()
        os.environ.update(env)
        sys.argv = [script] + args
        sys.path.insert(0, str(Path(script).parent))
        runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 - a run's failure is its exit status, as in a process
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _wait(pid: int, timeout: float) -> int:
    fd = os.pidfd_open(pid)
    try:
        if not select.select([fd], [], [], timeout)[0]:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(fd)
    return os.waitstatus_to_exitcode(status)
