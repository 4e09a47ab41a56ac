"""Join and verify the packaged GGUF models installed in the image, at build time (not per step).

Models whose packages requirements/models.txt does not install are skipped, and said so.
"""

from ragwatch.llm.local import MODELS, ModelNotInstalledError, model_path

for name in MODELS:
    try:
        print(f"{name}: {model_path(name)}")
    except ModelNotInstalledError:
        print(f"{name}: not installed in the image (not in requirements/models.txt)")
