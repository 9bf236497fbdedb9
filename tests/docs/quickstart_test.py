#!/usr/bin/env python3
"""Follows docs/quickstart.md and runs every command in it.

In a scratch folder that links the checkout's tracked entries and its build
(so `build/bin/...`, `configs/...` and `scripts/...` resolve as they do in a
checkout, and nothing is written into the checkout): each ```sh block runs
to completion in bash (`set -euo pipefail`; exported variables carry over
from block to block); a ```sh terminal=NAME block starts a background
terminal; `<!-- test: wait-for NAME "TEXT" SECONDS -->` waits for TEXT in a
terminal's output; `<!-- test: ctrl-c NAME ... -->` sends SIGINT to those
terminals and expects each to exit with code 0. At the end no process may
mention the scratch folder.

usage: quickstart_test.py CHECKOUT [BUILD_DIR]
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

FENCE = re.compile(r"^```sh(.*)$")
DIRECTIVE = re.compile(r"^<!-- test: (.*) -->$")


def blocks(doc):
    """Yields ("run", code, info) and ("directive", text, None) in document order."""
    lines = doc.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        d = DIRECTIVE.match(lines[i])
        if m:
            code = []
            i += 1
            while not lines[i].startswith("```"):
                code.append(lines[i])
                i += 1
            yield "run", "\n".join(code), m.group(1).strip()
        elif d:
            yield "directive", d.group(1), None
        i += 1


def mentioning(text):
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().decode(errors="replace")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and text in cmd:
            out.append(int(pid))
    return out


def main():
    checkout = os.path.realpath(sys.argv[1])
    build = os.path.realpath(sys.argv[2]) if len(sys.argv) > 2 else os.path.join(checkout, "build")
    with open(os.path.join(checkout, "docs/quickstart.md")) as f:
        doc = f.read()
    scratch = tempfile.mkdtemp(prefix="crucible-quickstart-")
    terminals = {}
    failures = []
    try:
        tracked = subprocess.run(["git", "-C", checkout, "ls-files"], capture_output=True, text=True, check=True)
        for name in sorted({p.split("/")[0] for p in tracked.stdout.split()}):
            os.symlink(os.path.join(checkout, name), os.path.join(scratch, name))
        os.symlink(build, os.path.join(scratch, "build"))
        tools_modules = os.path.join(checkout, "tools/node_modules")
        os.makedirs(os.path.join(scratch, "tmp"))
        env = dict(os.environ, TMPDIR=os.path.join(scratch, "tmp"), CRUCIBLE_SKIP_DOCKER="1")
        envfile = os.path.join(scratch, ".quickstart-env")
        open(envfile, "w").close()
        assert os.path.isdir(tools_modules), "run scripts/setup.sh first"

        for kind, text, info in blocks(doc):
            if kind == "run" and info.startswith("terminal="):
                name = info.split("=", 1)[1]
                log = open(os.path.join(scratch, f"{name}.log"), "w")
                print(f"quickstart: terminal {name}: {text.splitlines()[0]}", flush=True)
                terminals[name] = (subprocess.Popen(["bash", "-c", f"source {envfile}\n{text}"], cwd=scratch, env=env,
                                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True),
                                   os.path.join(scratch, f"{name}.log"))
            elif kind == "run":
                print(f"quickstart: run: {text.splitlines()[0]}", flush=True)
                script = f"set -euo pipefail\nsource {envfile}\n{text}\nexport -p > {envfile}\n"
                r = subprocess.run(["bash", "-c", script], cwd=scratch, env=env, capture_output=True, text=True,
                                   timeout=900)
                if r.returncode != 0:
                    raise AssertionError(f"exit {r.returncode} from:\n{text}\n--- stdout\n{r.stdout[-3000:]}"
                                         f"\n--- stderr\n{r.stderr[-3000:]}")
            else:
                words = text.split(" ", 1)
                if words[0] == "wait-for":
                    m = re.match(r'(\S+) "([^"]*)" (\d+)$', words[1])
                    name, needle, seconds = m.group(1), m.group(2), int(m.group(3))
                    proc, log = terminals[name]
                    deadline = time.time() + seconds
                    while True:
                        with open(log, errors="replace") as f:
                            seen = f.read()
                        if needle in seen:
                            break
                        if proc.poll() is not None or time.time() > deadline:
                            raise AssertionError(f"terminal {name} never printed {needle!r} "
                                                 f"(exit {proc.poll()}):\n{seen[-3000:]}")
                        time.sleep(0.5)
                    print(f"quickstart: {name} printed {needle!r}", flush=True)
                elif words[0] == "ctrl-c":
                    for name in words[1].split():
                        proc, log = terminals[name]
                        os.killpg(proc.pid, signal.SIGINT)
                        try:
                            rc = proc.wait(timeout=120)
                        except subprocess.TimeoutExpired:
                            rc = "timeout"
                        with open(log, errors="replace") as f:
                            seen = f.read()
                        if rc != 0:
                            failures.append(f"terminal {name} ended with {rc} after Ctrl-C:\n{seen[-2000:]}")
                        print(f"quickstart: {name} stopped with {rc}", flush=True)
                        del terminals[name]
                else:
                    raise AssertionError(f"unknown test directive: {text}")
        if terminals:
            failures.append(f"terminals still running at the end of the page: {sorted(terminals)}")
        left = mentioning(scratch)
        if left:
            failures.append(f"processes left running: {left}")
    except AssertionError as e:
        failures.append(str(e))
    finally:
        for proc, _ in terminals.values():
            try:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        for pid in mentioning(scratch):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(scratch, ignore_errors=True)
    if failures:
        print("quickstart: FAILED\n" + "\n".join(failures), flush=True)
        return 1
    print("quickstart: every command of docs/quickstart.md ran as the page says", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
