"""The local runtime has one door: code outside `ragwatch/llm/local/` imports `ragwatch.llm.local` and
none of the modules behind it, and opening the door loads neither litellm nor llama-cpp-python."""

from __future__ import annotations

import subprocess
import sys

from tests.unit.test_import_graph import ROOT, import_graph

DOOR = "ragwatch.llm.local"


def test_the_graph_sees_who_uses_the_runtime():
    # the control: the client's late import of the door is an edge, and the door reaches its rooms
    graph = import_graph()
    assert graph.has_edge("ragwatch.llm.client", DOOR)
    assert graph.has_edge("ragwatch.llm.local.completion", "ragwatch.llm.local.decode_engine")


def test_nothing_outside_the_runtime_imports_behind_its_door():
    behind = [(a, b) for a, b in import_graph().edges
              if b.startswith(DOOR + ".") and not (a == DOOR or a.startswith(DOOR + "."))]
    assert behind == []


def test_no_room_of_the_runtime_imports_its_door():
    """The modules behind the door are the door's parts: none reaches back through it."""
    back = [a for a, b in import_graph().edges if b == DOOR and a.startswith(DOOR + ".")]
    assert back == []


def test_opening_the_door_loads_no_inference_library():
    code = ("import sys\nimport ragwatch.llm.local as local\nlocal.packaged('local/smollm2-135m-instruct')\n"
            "print([m for m in ('litellm', 'llama_cpp', 'numpy') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
