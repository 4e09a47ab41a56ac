"""ragwatch: continuous evaluation of retrieval-augmented generation systems.

The core library never imports zenml: every metric runs from a notebook or pytest.
"""

__version__ = "0.1.0"
