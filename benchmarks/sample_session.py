"""Records the short session committed under ``sessions/``: ``ktui agent`` on the vector_add example, driven by
the scripted test model (``tests/scripted_llm.py``: no provider, no key), which writes v2 from v1 and gets its
ladder result back. Run from the repository root; the session lands in ``sessions/<id>/``::

    python benchmarks/sample_session.py            # then: ktui replay <id>, ktui export <id> --format md

The workspace is a copy of this repository's vector_add example in a temporary folder (so no version here is
touched); the recorded session folder is moved into ``sessions/`` with the workspace path left as recorded."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.scripted_llm import Call, Reply, ScriptedLLM  # noqa: E402


def main() -> int:
    v1 = (ROOT / "kernels/vector_add/v1.py").read_text()
    v2 = (ROOT / "kernels/vector_add/v2.py").read_text()
    with tempfile.TemporaryDirectory(prefix="ktui-sample-") as tmp:
        ws = Path(tmp) / "workspace"
        (ws / "references").mkdir(parents=True)
        (ws / "kernels/vector_add").mkdir(parents=True)
        shutil.copy(ROOT / "references/vector_add.py", ws / "references/vector_add.py")
        (ws / "kernels/vector_add/v1.py").write_text(v1)
        script = [
            Reply(
                "I read v1; v2 loads in wider blocks and masks the tail.",
                tool_calls=[Call("write_kernel", {"problem": "vector_add", "source": v2})],
            ),
            Reply("Wrote kernels/vector_add/v2.py; its ladder runs now."),
            Reply("v2 passes every check on the CPU; time it on a GPU with `ktui run --device cuda`."),
        ]
        with ScriptedLLM(script) as llm:
            env = {**os.environ, "KTUI_API_BASE": llm.api_base, "OPENAI_API_KEY": "scripted-model-needs-no-key"}
            env.pop("KTUI_MODEL", None)
            cmd = [
                sys.executable,
                "-m",
                "ktui",
                "agent",
                "vector_add",
                "-m",
                "make v1 faster, keep it correct",
                "--model",
                "openai/scripted",
                "--yes",
                "--max-rounds",
                "1",
                "--workspace",
                str(ws),
                "--device",
                "cpu",
            ]
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        print(p.stdout[-2000:], p.stderr[-2000:], sep="\n")
        if p.returncode != 0:
            return p.returncode
        (folder,) = [f for f in (ws / "sessions").iterdir() if f.is_dir()]
        dest = ROOT / "sessions" / folder.name
        shutil.copytree(folder, dest)
        print(f"recorded {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
