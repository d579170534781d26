"""BAD (robust-orphans): a correct vector add that, once per import, leaves three processes behind whose command
lines are not ktui's: a forked child that ``os.execv``s ``sleep``, a ``subprocess.Popen`` in a session of its own,
and a double-forked ``setsid`` grandchild that execs ``sleep``. Each writes its pid into the folder ``PIDS`` (filled
in by the test). ktui must kill all of them after the ladder."""

import os
import subprocess

import torch

PIDS = "{pids}"  # the test replaces this with a folder
_LEFT = False


def _note(pid):
    tmp = os.path.join(PIDS, "." + str(pid))
    with open(tmp, "w") as f:
        f.write(str(pid))
    os.rename(tmp, os.path.join(PIDS, str(pid)))


def _leave_children():
    sleep = "/bin/sleep" if os.path.exists("/bin/sleep") else "/usr/bin/sleep"
    child = os.fork()  # 1: fork, then exec a program that is not ktui's
    if child == 0:
        os.execv(sleep, ["sleep", "600"])
    _note(child)
    p = subprocess.Popen([sleep, "600"], start_new_session=True)  # 2: a Popen left running, out of the group
    _note(p.pid)
    mid = os.fork()  # 3: double fork + setsid, the grandchild execs sleep
    if mid == 0:
        try:
            os.setsid()
            grandchild = os.fork()
            if grandchild == 0:
                os.execv(sleep, ["sleep", "600"])
            _note(grandchild)
        finally:
            os._exit(0)
    os.waitpid(mid, 0)


def custom_kernel(data):
    global _LEFT
    if not _LEFT:
        _LEFT = True
        _leave_children()
    a, b = data
    return torch.add(a, b)
